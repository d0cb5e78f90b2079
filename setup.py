"""Beam 2.62's ``--setup_file`` (portable runners, Dataflow) takes a setup.py: this one builds the
project exactly as pyproject.toml declares it (``python setup.py sdist``)."""
from setuptools import setup

setup()
