# Written by: sluice convert $FIXTURES/gguf/model.gguf $OUT/direct/model.apsim --shard 100KB --key …
# The signing key is read from the sensitive variable signing_key:
# set SLUICE_VAR_signing_key in the environment, or pass -var signing_key=….

variable "input" {
  type        = string
  default     = "$FIXTURES/gguf/model.gguf"
  description = "The checkpoint to read."
}

variable "output" {
  type        = string
  default     = "$OUT/direct/model.apsim"
  description = "The file to write."
}

variable "signing_key" {
  type        = string
  sensitive   = true
  description = "HMAC-SHA256 key the outputs are signed with."
}

source "gguf" "in" {
  path = var.input
}

transform "sign" "key" {
  input = source.in
  key   = var.signing_key
}

sink "apsim" "out" {
  input = transform.key
  path  = var.output
  shard = "100KB"
}
