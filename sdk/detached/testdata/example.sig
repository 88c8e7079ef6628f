{
  "format": "sluice-detached-signature",
  "version": 1,
  "file": "model.safetensors",
  "size": 6000,
  "sha256": "0f3e8d3e2e1e9a14d1d8f1d3a4d3b1c5e6f708192a3b4c5d6e7f8091a2b3c4d5",
  "algorithm": "HMAC-SHA256",
  "key_id": "shared secret",
  "hmac": "5d2c1b0a9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817060504"
}
