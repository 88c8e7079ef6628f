# Physically transpose linear weights between PyTorch's [out, in] layout and
# JAX/Flax's [in, out] kernels. Here the Hugging Face sample's projection
# weights are exported as Flax-style kernels, and a second transpose brings
# them back (the round trip is byte for byte).
#
#   go run ./cmd/sluice plan pipelines/flax-kernels
#   go run ./cmd/sluice run pipelines/flax-kernels
#
# A transpose of a 2-D tensor needs the whole tensor in memory, twice; the
# plan says how much for each tensor, and a run stops with advice when it
# exceeds --max-memory. Outputs go to out/flax-kernels/.

variable "model_dir" {
  type        = string
  default     = ""
  description = "A Hugging Face checkpoint directory. Empty means the shipped sample, testdata/sample."
}

variable "out_dir" {
  type    = string
  default = "out/flax-kernels"
}

locals {
  model_dir = var.model_dir != "" ? var.model_dir : "${path.root}/../../testdata/sample"
}

source "safetensors" "hf" {
  path = local.model_dir
}

transform "transpose" "to_flax" {
  input = source.hf
  match = ["*_proj.weight"]
  axes  = [1, 0]
}

transform "rename" "kernels" {
  input = transform.to_flax
  rule {
    from = "_proj\\.weight$"
    to   = "_proj.kernel"
  }
}

sink "safetensors" "flax" {
  input = transform.kernels
  path  = "${var.out_dir}/flax/model.safetensors"
}

transform "transpose" "to_torch" {
  input = transform.to_flax
  match = ["*_proj.weight"]
}

sink "safetensors" "torch" {
  input = transform.to_torch
  path  = "${var.out_dir}/roundtrip/model.safetensors"
}
