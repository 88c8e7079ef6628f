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

// func mxfp4CodesSSE2(q *byte, x *float32, e, pre, inv float32)
// mxfp4Codes for 32 finite x at a scale e ≥ amax/16 (see there): with
// a = |x| and t = (a·pre)·inv (= a/e, below 16), k counts the values
// kv = 1, 2, 3, 4, 6, 8, 12 that are ≤ t; kv[k]·e and kv[k+1]·e (+Inf past
// 12) are the two values around a, and k steps up when the upper one's
// error has smaller bits. The code is k, with bit 3 for a negative x unless
// k is 0.
TEXT ·mxfp4CodesSSE2(SB), NOSPLIT, $32-28
	MOVQ   q+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVSS  e+16(FP), X13
	SHUFPS $0, X13, X13
	MOVSS  pre+20(FP), X14
	SHUFPS $0, X14, X14
	MOVSS  inv+24(FP), X15
	SHUFPS $0, X15, X15
	MOVL   $0x7F800000, AX
	MOVL   AX, X12
	PSHUFL $0, X12, X12           // +Inf

// One threshold kv (float32 bits imm): X3 = kv ≤ t; X1 = max(X1, kv if
// taken); X2 = min(X2, kv if not, else Inf); X4 -= mask (counts).
#define STEP(imm) \
	MOVL   $imm, AX; \
	MOVL   AX, X5; \
	PSHUFL $0, X5, X5; \
	MOVAPS X5, X3; \
	CMPPS  X0, X3, $2; \
	MOVAPS X3, X6; \
	ANDPS  X5, X6; \
	MAXPS  X6, X1; \
	MOVAPS X3, X6; \
	ANDNPS X5, X6; \
	MOVAPS X3, X7; \
	ANDPS  X12, X7; \
	ORPS   X7, X6; \
	MINPS  X6, X2; \
	PSUBL  X3, X4

// CODES(off, R): the four codes of x[off/4 ..] as int32 in R.
#define CODES(off, R) \
	MOVUPS off(SI), X8; \
	MOVL   $0x7FFFFFFF, AX; \
	MOVL   AX, X9; \
	PSHUFL $0, X9, X9; \
	MOVAPS X8, X10; \
	ANDPS  X9, X10; \
	MOVAPS X10, X0; \
	MULPS  X14, X0; \
	MULPS  X15, X0; \
	XORPS  X1, X1; \
	MOVAPS X12, X2; \
	PXOR   X4, X4; \
	STEP(0x3F800000); \
	STEP(0x40000000); \
	STEP(0x40400000); \
	STEP(0x40800000); \
	STEP(0x40C00000); \
	STEP(0x41000000); \
	STEP(0x41400000); \
	MULPS  X13, X1; \
	MULPS  X13, X2; \
	MOVAPS X10, X5; \
	SUBPS  X1, X5; \
	SUBPS  X10, X2; \
	PCMPGTL X2, X5; \
	PSUBL  X5, X4; \
	PSRLL  $31, X8; \
	PSLLL  $3, X8; \
	PXOR   X6, X6; \
	PCMPEQL X4, X6; \
	PANDN  X8, X6; \
	POR    X6, X4; \
	MOVO   X4, R

	// CODES clobbers X0..X10, so partial results wait on the stack.
#define PAIR(off) \
	CODES(off, X11); \
	MOVOU  X11, t0-16(SP); \
	CODES(off+16, X11); \
	MOVOU  t0-16(SP), X8; \
	PACKSSLW X11, X8

#define SIXTEEN(off) \
	PAIR(off); \
	MOVOU  X8, t1-32(SP); \
	PAIR(off+32); \
	MOVOU  t1-32(SP), X11; \
	PACKUSWB X8, X11

	SIXTEEN(0)
	MOVOU  X11, 0(DI)       // codes 0..15
	SIXTEEN(64)             // codes 16..31
	PSLLW  $4, X11
	MOVOU  0(DI), X8
	POR    X11, X8
	MOVOU  X8, 0(DI)
	RET
