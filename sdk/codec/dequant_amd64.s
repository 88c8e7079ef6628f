//go:build amd64 && !purego

#include "textflag.h"

// func dqSSE2(dst *float32, b, h *byte, n int, p *dqParams, d, m float32)
// For i < n (a multiple of 16), with the parameters of p (see dqParams):
//   v = ((((b[i] >> shift) & mask) | (((h[i] >> hshift) & hmask) << hpos)) ^ xor) - off
//   dst[i] = float32(d·float32(v)), then - m (mode 1) or + m (mode 2).
// The shifts are done on 16-bit words; the masks then drop the bits that
// came from the neighbouring byte.
TEXT ·dqSSE2(SB), NOSPLIT, $0-48
	MOVQ   dst+0(FP), DI
	MOVQ   b+8(FP), SI
	MOVQ   h+16(FP), DX
	MOVQ   n+24(FP), CX
	MOVQ   p+32(FP), BX
	SHRQ   $4, CX
	JZ     done
	MOVQ   0(BX), X8        // shift
	MOVQ   8(BX), X9        // hshift
	MOVQ   16(BX), X10      // hpos
	MOVL   24(BX), AX
	MOVL   AX, X11
	PSHUFL $0, X11, X11     // mask bytes
	MOVL   28(BX), AX
	MOVL   AX, X12
	PSHUFL $0, X12, X12     // hmask bytes
	MOVL   32(BX), AX
	MOVL   AX, X13
	PSHUFL $0, X13, X13     // xor bytes
	MOVL   36(BX), AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14     // off
	MOVSS  d+40(FP), X15
	SHUFPS $0, X15, X15
	MOVSS  m+44(FP), X7
	SHUFPS $0, X7, X7

#define OUT0(R, off) \
	PSUBL  X14, R; \
	CVTPL2PS R, R; \
	MULPS  X15, R; \
	MOVUPS R, off(DI)

#define OUT1(R, off) \
	PSUBL  X14, R; \
	CVTPL2PS R, R; \
	MULPS  X15, R; \
	SUBPS  X7, R; \
	MOVUPS R, off(DI)

#define OUT2(R, off) \
	PSUBL  X14, R; \
	CVTPL2PS R, R; \
	MULPS  X15, R; \
	ADDPS  X7, R; \
	MOVUPS R, off(DI)

#define LOAD \
	MOVOU  (SI), X0; \
	PSRLW  X8, X0; \
	PAND   X11, X0; \
	MOVOU  (DX), X1; \
	PSRLW  X9, X1; \
	PAND   X12, X1; \
	PSLLW  X10, X1; \
	POR    X1, X0; \
	PXOR   X13, X0; \
	PXOR   X6, X6; \
	MOVO   X0, X2; \
	PUNPCKLBW X6, X0; \
	PUNPCKHBW X6, X2; \
	MOVO   X0, X1; \
	PUNPCKLWL X6, X0; \
	PUNPCKHWL X6, X1; \
	MOVO   X2, X3; \
	PUNPCKLWL X6, X2; \
	PUNPCKHWL X6, X3

#define NEXT \
	ADDQ   $16, SI; \
	ADDQ   $16, DX; \
	ADDQ   $64, DI; \
	DECQ   CX

	MOVQ   40(BX), R8       // mode
	CMPQ   R8, $1
	JEQ    loop1
	JGT    loop2

loop0:
	LOAD
	OUT0(X0, 0)
	OUT0(X1, 16)
	OUT0(X2, 32)
	OUT0(X3, 48)
	NEXT
	JNZ    loop0
	RET

loop1:
	LOAD
	OUT1(X0, 0)
	OUT1(X1, 16)
	OUT1(X2, 32)
	OUT1(X3, 48)
	NEXT
	JNZ    loop1
	RET

loop2:
	LOAD
	OUT2(X0, 0)
	OUT2(X1, 16)
	OUT2(X2, 32)
	OUT2(X3, 48)
	NEXT
	JNZ    loop2
	RET

done:
	RET

// func q8BlocksSSE2(dst *float32, src *byte, ds *float32, n int)
// n q8_0 blocks at src (34 bytes: d, then 32 int8) to dst:
// dst[32i+j] = float32(int8 q[j])·ds[i], ds[i] being the block's d.
TEXT ·q8BlocksSSE2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   ds+16(FP), DX
	MOVQ   n+24(FP), CX
	TESTQ  CX, CX
	JLE    q8done

#define Q8HALF(off, out) \
	MOVOU  off(SI), X0; \
	PUNPCKLBW X0, X1; \
	PUNPCKHBW X0, X2; \
	PSRAW  $8, X1; \
	PSRAW  $8, X2; \
	PUNPCKLWL X1, X3; \
	PUNPCKHWL X1, X4; \
	PUNPCKLWL X2, X5; \
	PUNPCKHWL X2, X6; \
	PSRAL  $16, X3; \
	PSRAL  $16, X4; \
	PSRAL  $16, X5; \
	PSRAL  $16, X6; \
	CVTPL2PS X3, X3; \
	CVTPL2PS X4, X4; \
	CVTPL2PS X5, X5; \
	CVTPL2PS X6, X6; \
	MULPS  X7, X3; \
	MULPS  X7, X4; \
	MULPS  X7, X5; \
	MULPS  X7, X6; \
	MOVUPS X3, (out)(DI); \
	MOVUPS X4, (out+16)(DI); \
	MOVUPS X5, (out+32)(DI); \
	MOVUPS X6, (out+48)(DI)

q8loop:
	MOVSS  (DX), X7
	SHUFPS $0, X7, X7
	Q8HALF(2, 0)
	Q8HALF(18, 64)
	ADDQ   $34, SI
	ADDQ   $4, DX
	ADDQ   $128, DI
	DECQ   CX
	JNZ    q8loop

q8done:
	RET
