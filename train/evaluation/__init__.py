"""Everything that scores a trained model: held-out loss and bits per byte, zero-shot tasks, the
lm-eval-harness task files, and GLUE fine-tuning (finetune/)."""
