# Written by: sluice convert $FIXTURES/apsim/model.apsim $OUT/direct/model.safetensors

variable "input" {
  type        = string
  default     = "$FIXTURES/apsim/model.apsim"
  description = "The checkpoint to read."
}

variable "output" {
  type        = string
  default     = "$OUT/direct/model.safetensors"
  description = "The file to write."
}

source "apsim" "in" {
  path = var.input
}

sink "safetensors" "out" {
  input = source.in
  path  = var.output
}
