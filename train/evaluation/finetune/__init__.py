"""GLUE fine-tuning of pretrained checkpoints of any objective (train finetune):

- :mod:`train.finetune.glue`: tasks and their local files;
- :mod:`train.finetune.metrics`: the official metrics and T5's GLUE average;
- :mod:`train.finetune.classifier`: how each model kind reads an example, the linear head;
- :mod:`train.finetune.run`: the loop, seeds, the learning-rate sweep and the summary.
"""
