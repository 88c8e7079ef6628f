//go:build amd64 && !purego

#include "textflag.h"

// SSE2 kernels for the ggml block codecs. Every packed operation is the
// IEEE float32 operation the Go code performs per element, so the results
// are bit-identical to the pure-Go versions.

// func roundClampSSE2(dst, x *float32, n int, scale float32, lo, hi int32) (same bool)
// dst[i] = float32(clamp(nearestInt(scale*x[i]), lo, hi)), n a multiple of 4;
// same reports whether dst already held exactly these values.
TEXT ·roundClampSSE2(SB), NOSPLIT, $0-41
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	MOVSS  scale+24(FP), X0
	SHUFPS $0, X0, X0
	MOVL   lo+28(FP), AX
	MOVL   AX, X1
	PSHUFL $0, X1, X1
	MOVL   hi+32(FP), AX
	MOVL   AX, X2
	PSHUFL $0, X2, X2
	MOVL   $0x4B400000, AX // 1.5·2^23
	MOVL   AX, X3
	PSHUFL $0, X3, X3
	MOVL   $0x007FFFFF, AX
	MOVL   AX, X4
	PSHUFL $0, X4, X4
	MOVL   $0x00400000, AX
	MOVL   AX, X5
	PSHUFL $0, X5, X5
	PCMPEQL X11, X11   // all lanes equal so far
	SHRQ   $2, CX
	JZ     done

loop:
	MOVUPS (SI), X6
	MULPS  X0, X6      // scale·x, rounded to float32
	ADDPS  X3, X6      // + 1.5·2^23: rounds half to even
	PAND   X4, X6
	PSUBL  X5, X6      // nearestInt
	MOVO   X1, X7
	PCMPGTL X6, X7     // lo > l
	MOVO   X7, X8
	PAND   X1, X8
	PANDN  X6, X7
	POR    X8, X7      // max(l, lo)
	MOVO   X7, X9
	PCMPGTL X2, X9     // l > hi
	MOVO   X9, X8
	PAND   X2, X8
	PANDN  X7, X9
	POR    X8, X9      // min(l, hi)
	CVTPL2PS X9, X10
	MOVUPS (DI), X12
	PCMPEQL X10, X12
	PAND   X12, X11
	MOVUPS X10, (DI)
	ADDQ   $16, SI
	ADDQ   $16, DI
	DECQ   CX
	JNZ    loop

done:
	PMOVMSKB X11, AX
	CMPL   AX, $0xffff
	SETEQ  same+40(FP)
	RET
