"""The train stage's entry points, as the CLI calls them, in one module: `c4forge train ...`
loads torch here, once, where a command needs it, and `train --help` starts without it."""
from c4forge.train.evaluation.evaluate import TASK_FILES, evaluate_checkpoint
from c4forge.train.evaluation.finetune.run import run_glue, task_configs
from c4forge.train.evaluation.lm_eval_tasks import GROUP, write_lm_eval_tasks
from c4forge.train.export import export_hf
from c4forge.train.trainer import train

__all__ = ["GROUP", "TASK_FILES", "evaluate_checkpoint", "export_hf", "run_glue", "task_configs",
           "train", "write_lm_eval_tasks"]
