"""lm-eval-harness on an export, in the side venv (tests/sidevenv.py): prints one JSON line with
each task's results and its samples (doc id, doc, responses).

    python tests/lm_eval_side.py HF_DIR TASK_DIR copa,winogrande MAX_LENGTH
"""
import json
import sys

from lm_eval import simple_evaluate
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager


def main(hf: str, task_dir: str, names: str, max_length: str) -> None:
    # max_length: the window train eval scores in (its --seq-len, by default the training one);
    # longer contexts are cut from the left by both.
    model = HFLM(pretrained=hf, dtype="float32", batch_size=16, device="cpu", max_length=int(max_length))
    out = simple_evaluate(model=model, tasks=names.split(","), task_manager=TaskManager(include_path=task_dir),
                          log_samples=True, num_fewshot=0)
    samples = {task: [{"doc_id": s["doc_id"], "doc": s["doc"], "resps": s["resps"]} for s in found]
               for task, found in out["samples"].items()}
    print(json.dumps({"results": out["results"], "samples": samples}, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:])
