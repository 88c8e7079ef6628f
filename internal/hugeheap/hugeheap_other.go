//go:build !linux

package hugeheap

// Reserve does nothing off Linux.
func Reserve(size int) error { return nil }
