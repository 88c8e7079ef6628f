//go:build !amd64 || purego

package codec

const useSSE2 = false

func roundClampSSE2(dst, x *float32, n int, scale float32, lo, hi int32) bool {
	panic("codec: no SSE2 kernels on this platform")
}
