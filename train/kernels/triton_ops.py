"""The Triton implementations under the names the model's kernel switches use."""
from c4forge.train.kernels.elementwise_triton import rmsnorm_triton as rmsnorm
from c4forge.train.kernels.elementwise_triton import rope_triton as rope
from c4forge.train.kernels.elementwise_triton import swiglu_triton as swiglu
from c4forge.train.kernels.linear_ce_triton import linear_cross_entropy_triton as cross_entropy

__all__ = ["cross_entropy", "rmsnorm", "rope", "swiglu"]
