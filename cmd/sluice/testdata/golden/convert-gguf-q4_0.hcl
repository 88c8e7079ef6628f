# Written by: sluice convert $FIXTURES/st/model.safetensors $OUT/direct/model.gguf --dtype q4_0

variable "input" {
  type        = string
  default     = "$FIXTURES/st/model.safetensors"
  description = "The checkpoint to read."
}

variable "output" {
  type        = string
  default     = "$OUT/direct/model.gguf"
  description = "The file to write."
}

source "safetensors" "in" {
  path = var.input
}

sink "gguf" "out" {
  input = source.in
  path  = var.output
  dtype = "q4_0"
}
