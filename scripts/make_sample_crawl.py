"""Write corpus/data/sample.warc.wet.gz: a small crawl, in Common Crawl's WET format, that
exercises every C4 rule. Deterministic (fixed seed, fixed dates); all text written for c4forge.

What is in it: English articles wrapped in navigation menus, cookie banners, policy footers and
"enable JavaScript" notices; lorem-ipsum placeholder pages; pages with code in braces; pages in
German, French and Spanish; exact duplicates on other hosts; near duplicates (a few words
changed); URL revisits (same page crawled twice, http/https, www, ?utm_ tails); pages with
Wikipedia-style citations; short pages with too few sentences; pages with a demo bad word.

Run: python scripts/make_sample_crawl.py [--output PATH]
"""
from __future__ import annotations

import argparse
import gzip
import io
import random
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ARTICLES = {
    "river-cleanup": [
        "Volunteers removed more than two tons of rubbish from the river banks on Saturday morning.",
        "The cleanup was organised by a local rowing club that trains on the water every week.",
        "Most of the waste was plastic packaging, but the group also pulled out three shopping trolleys and a bicycle.",
        "Council officers said the amount of litter had fallen since new bins were installed along the towpath last spring.",
        "The club plans to repeat the event in October and hopes that more families will join.",
        "Anyone who wants to help can register at the boathouse, where gloves and bags will be provided.",
    ],
    "bread-baking": [
        "Baking bread at home takes patience more than skill, and the first loaf rarely looks like the picture.",
        "Flour, water, salt and yeast are all you need, although the quality of the flour matters a great deal.",
        "A long, slow rise in a cool kitchen gives the dough time to develop flavour.",
        "Many bakers fold the dough every half hour instead of kneading it, which builds strength with less effort.",
        "When the loaf sounds hollow as you tap the bottom, it is usually done.",
        "Let it cool completely before slicing, or the crumb will turn gummy.",
    ],
    "solar-schools": [
        "Twelve primary schools in the district will have solar panels on their roofs by the end of the year.",
        "The project is paid for by a grant from the regional energy agency and by savings on electricity bills.",
        "Pupils will be able to watch live figures on a screen in the entrance hall showing how much power is produced.",
        "Teachers say the panels are a good way to explain how electricity is generated and stored.",
        "The first installation, at the school on Mill Lane, has already cut its energy costs by a third.",
        "If the scheme works well, secondary schools could follow in two years.",
    ],
    "chess-club": [
        "The chess club that meets in the library on Thursday evenings celebrated its fiftieth anniversary this week.",
        "Founded by two retired teachers, it now has more than eighty members between the ages of seven and ninety.",
        "Beginners are paired with experienced players who explain openings and common mistakes.",
        "The club also runs a summer tournament that attracts players from neighbouring towns.",
        "Its oldest member still remembers the first meeting, when there were only four boards and a kettle.",
        "New members are always welcome, and no booking is required.",
    ],
    "train-timetable": [
        "A new timetable for regional trains comes into force on the first Sunday of next month.",
        "Services between the coast and the city will run every thirty minutes instead of every hour.",
        "The operator says the change was made possible by two additional trains delivered in the spring.",
        "Commuters have welcomed the news, although some evening connections will leave earlier than before.",
        "Printed timetables are available at every staffed station.",
        "Passengers are advised to check their journey before travelling during the first week.",
    ],
    "garden-bees": [
        "Gardeners can help wild bees by leaving a corner of the lawn uncut during the summer months.",
        "Flowering plants such as lavender, thyme and borage provide food from early spring until autumn.",
        "A simple bee hotel made from hollow stems gives solitary bees a place to lay their eggs.",
        "Pesticides should be avoided, especially on plants that are in flower.",
        "Researchers at the university have counted more than sixty species of bee in city gardens.",
        "They say that even a small balcony with a few pots can make a difference.",
    ],
    "museum-reopening": [
        "The town museum reopened on Friday after an eighteen-month renovation.",
        "Visitors can now see the collection of Roman coins in a new gallery on the ground floor.",
        "A lift has been installed so that every room is accessible to wheelchair users.",
        "The museum café, run by a local charity, serves soup and sandwiches at lunchtime.",
        "Entry remains free, although donations are encouraged.",
        "Guided tours for school classes can be booked by telephone.",
    ],
    "cycling-lanes": [
        "Work on a protected cycling lane along the main road will begin in March.",
        "The lane will be separated from traffic by a low kerb and will run for almost three kilometres.",
        "Shop owners had worried about the loss of parking spaces, but a compromise was reached last autumn.",
        "Delivery vans will be allowed to stop in marked bays outside the shops.",
        "The council expects the number of people cycling to work to double within five years.",
        "Temporary diversions will be signposted while the work is carried out.",
    ],
}

NEAR_DUP_EDITS = [("two tons", "three tons"), ("Saturday", "Sunday"), ("October", "November")]

FOREIGN = {
    "de": [
        "Die Stadtbibliothek verlängert ab nächster Woche ihre Öffnungszeiten am Samstag.",
        "Künftig können Besucherinnen und Besucher bis achtzehn Uhr Bücher ausleihen und zurückgeben.",
        "Die Leiterin der Bibliothek sagte, die Nachfrage nach Lesungen für Kinder sei stark gestiegen.",
        "Außerdem wird im Lesesaal ein neuer Bereich mit Zeitschriften und Tageszeitungen eingerichtet.",
    ],
    "fr": [
        "Le marché du samedi matin accueille cette année une vingtaine de nouveaux producteurs locaux.",
        "On y trouve des fromages, du miel, des légumes de saison et du pain cuit au feu de bois.",
        "La mairie a décidé de fermer la place aux voitures pendant toute la durée du marché.",
        "Les habitants apprécient cette ambiance calme et conviviale.",
    ],
    "es": [
        "El ayuntamiento ha inaugurado un nuevo parque con más de doscientos árboles en el barrio norte.",
        "El parque cuenta con una zona de juegos para niños, un pequeño lago y varios caminos para pasear.",
        "Los vecinos participaron en el diseño del proyecto durante varias reuniones públicas.",
        "Las obras terminaron dos meses antes de lo previsto.",
    ],
}

NAV = ["Home | News | Sport | Weather | Contact", "Menu", "Search", "Subscribe to our newsletter",
       "Share this article", "Related stories", "Skip to main content"]
FOOTER = [
    "This website uses cookies to improve your experience. By continuing you agree to our use of cookies.",
    "Read our privacy policy and terms of use before commenting on this article.",
    "Copyright 2019 The Example Gazette. All rights reserved",
    "Please enable JavaScript in your browser to see the comments on this page.",
]
LOREM = [
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea.",
    "Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat.",
    "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit.",
]
CODE = [
    "How to read a configuration file in a few lines of code.",
    "The function below opens the file, parses it and returns a dictionary of settings.",
    "It assumes the file exists and is valid, so add error handling in production code.",
    "function readConfig(path) { return JSON.parse(fs.readFileSync(path, 'utf8')); }.",
    "Call it once at start-up and keep the result in a module-level variable.",
]
CITED = [
    "The bridge was completed in 1887 and was at the time the longest of its kind in the region.[1]",
    "Its designer had previously worked on railway viaducts in the north of the country.[2][3]",
    "The structure was strengthened in the 1950s to carry heavier traffic.[citation needed]",
    "Today it is used only by pedestrians and cyclists and is a protected monument.[edit]",
]
DEMO_BADWORD = "flibbertigibbet"  # the demo's stand-in bad word (see corpus/data/demo-badwords/en)


def wet_record(url: str, date: str, text: str) -> bytes:
    body = text.encode("utf-8")
    record_id = uuid.UUID(int=random.getrandbits(128))
    head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: {date}\r\nWARC-Record-ID: <urn:uuid:{record_id}>\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("utf-8") + body + b"\r\n\r\n"


def warcinfo() -> bytes:
    fields = b"isPartOf: c4forge-sample\r\ndescription: synthetic pages that exercise every C4 rule\r\n"
    head = (b"WARC/1.0\r\nWARC-Type: warcinfo\r\nWARC-Date: 2019-07-01T00:00:00Z\r\n"
            b"Content-Type: application/warc-fields\r\nContent-Length: " + str(len(fields)).encode()
            + b"\r\n\r\n")
    return head + fields + b"\r\n\r\n"


def wrap(lines, rng: random.Random) -> str:
    """An article inside the boilerplate a real page carries."""
    nav = rng.sample(NAV, 4)
    footer = rng.sample(FOOTER, 3)
    return "\n".join(nav + lines + footer)


def pages(rng: random.Random):
    day = 1
    for slug, lines in ARTICLES.items():
        host = f"news{len(slug) % 4}.example.org"
        date = f"2019-07-{day:02d}T10:00:00Z"
        day += 1
        yield f"https://www.{host}/{slug}", date, wrap(lines, rng)
        # URL revisit: the same page crawled later over http, with a tracking tail and an update.
        yield (f"http://{host}/{slug}/?utm_source=feed", f"2019-07-{day + 10:02d}T08:00:00Z",
               wrap(lines + ["This article was updated with new information from the organisers."], rng))
        # Exact copy syndicated on another site (line dedup keeps one owner per line).
        yield f"https://mirror.example.net/{slug}", date, wrap(lines, rng)
    # Near duplicates: a few words changed.
    for old, new in NEAR_DUP_EDITS:
        lines = [line.replace(old, new) for line in ARTICLES["river-cleanup"]]
        yield f"https://copies.example.com/river-{new.replace(' ', '-')}", "2019-07-20T12:00:00Z", wrap(lines, rng)
    # Other languages.
    for lang, lines in FOREIGN.items():
        for i in range(3):
            yield (f"https://{lang}.example.eu/artikel-{i}", f"2019-07-0{i + 1}T09:00:00Z",
                   wrap(rng.sample(lines, len(lines)), rng))
    # Placeholder pages, code pages, citations, too few sentences, bad word.
    for i in range(4):
        yield f"https://themes.example.com/demo-{i}", "2019-07-05T00:00:00Z", "\n".join(NAV[:3] + LOREM)
    for i in range(3):
        yield f"https://dev.example.io/snippets/{i}", "2019-07-06T00:00:00Z", "\n".join(CODE)
    yield "https://wiki.example.org/Old_Bridge", "2019-07-07T00:00:00Z", "\n".join(["Old Bridge"] + CITED)
    for i in range(3):
        yield (f"https://short.example.com/{i}", "2019-07-08T00:00:00Z",
               "\n".join(NAV[:4] + ["Our shop is closed for the holidays and will reopen soon."]))
    yield ("https://forum.example.com/thread/7", "2019-07-09T00:00:00Z",
           wrap([sentence(rng) for _ in range(4)]
                + [f"Some people called the old parking rules a {DEMO_BADWORD} idea."], rng))
    # Near duplicates that survive line dedup: long paragraphs, one word changed in each.
    paragraphs = [" ".join(sentence(rng) for _ in range(6)) for _ in range(4)]
    yield "https://longreads.example.com/feature", "2019-07-10T00:00:00Z", wrap(paragraphs, rng)
    for variant, (old, new) in enumerate([(" the ", " a "), (" a ", " the ")]):
        edited = [p.replace(old, new, 1) for p in paragraphs]
        yield (f"https://reprints{variant}.example.net/feature", "2019-07-11T00:00:00Z",
               wrap(edited, rng))
    # Distinct English posts, so the demo's tokenizer and model see enough unique text.
    for i in range(120):
        yield (f"https://blog{i % 5}.example.com/post/{i}", f"2019-06-{(i % 28) + 1:02d}T07:30:00Z",
               wrap([sentence(rng) for _ in range(rng.randint(5, 10))], rng))


SUBJECTS = ["The council", "A local charity", "The new mayor", "Our reporter", "A group of students",
            "The regional bus company", "The football club", "A retired engineer", "The hospital trust",
            "Two neighbours", "The village school", "A family business", "The fire brigade",
            "The weather service", "A young architect", "The harbour authority", "The choir",
            "A team of researchers", "The police", "The garden centre"]
VERBS = ["announced", "described", "criticised", "welcomed", "postponed", "approved", "investigated",
         "celebrated", "questioned", "supported", "explained", "rejected", "completed", "proposed"]
OBJECTS = ["a plan to repair the old footbridge", "the cost of the new swimming pool",
           "a festival of music and food", "changes to the recycling collection", "a shortage of nurses",
           "the opening hours of the town hall", "a project to plant a thousand trees",
           "the results of the spring exams", "a new route for the night bus", "the sale of the old cinema",
           "plans for affordable housing near the station", "a survey of birds on the marshes",
           "a campaign to reduce food waste", "the restoration of the church tower",
           "a dispute about noise from the airport", "free swimming lessons for children"]
WHEN = ["on Monday", "last week", "earlier this month", "after a long meeting", "in a short statement",
        "at the annual meeting", "during a visit to the site", "in a letter to residents", "this morning",
        "after months of debate"]
TAILS = ["Residents will be able to comment until the end of the month.",
         "A decision is expected before the summer holidays.",
         "The first results should be available in about {n} weeks.",
         "About {n} people attended the meeting, more than usual.",
         "The work is expected to cost around {n} thousand pounds.",
         "Further details will be published on the notice board outside the library.",
         "Critics argue that the money could be spent better elsewhere.",
         "Supporters say the change is long overdue.",
         "Similar schemes in {n} other towns have had mixed results.",
         "The organisers thanked everyone who took part."]


def sentence(rng: random.Random) -> str:
    """One plausible news sentence; the combinations make nearly every line unique."""
    if rng.random() < 0.3:
        return rng.choice(TAILS).format(n=rng.randint(3, 97))
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)}"
            f"{rng.choice(['.', '.', '.', ', according to the local paper.', ', and more news will follow.'])}")


def build(path: Path) -> int:
    rng = random.Random(20190701)
    random.seed(20190701)
    out = io.BytesIO()
    count = 0
    for data in [warcinfo()] + [wet_record(*p) for p in pages(rng)]:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as member:
            member.write(data)
        count += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out.getvalue())
    return count - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "corpus" / "data" / "sample.warc.wet.gz")
    args = parser.parse_args()
    n = build(args.output)
    print(f"wrote {n} pages to {args.output}")


if __name__ == "__main__":
    main()
