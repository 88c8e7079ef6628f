//go:build amd64 && !purego

#include "textflag.h"

// SSE2 kernels for the ggml block codecs, and q8_0's AVX2 encoder. Every
// packed operation is the IEEE float32 operation the Go code performs per
// element, so the results are bit-identical to the pure-Go versions.

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

// func nibblesSSE2(x *float32, sub, mul, add float32, hi int32, q *byte) (qh uint32)
// For the 32 elements of x: c = min(int32((x-sub)·mul + add), hi), truncating.
// Writes q[j] = c[j]&15 | (c[j+16]&15)<<4 for j < 16 and returns bit 4 of
// c[j] in bit j of qh. The caller guarantees 0 ≤ c ≤ 31 before the clamp
// can matter (finite input and scale).
TEXT ·nibblesSSE2(SB), NOSPLIT, $0-36
	MOVQ   x+0(FP), SI
	MOVSS  sub+8(FP), X12
	SHUFPS $0, X12, X12
	MOVSS  mul+12(FP), X13
	SHUFPS $0, X13, X13
	MOVSS  add+16(FP), X14
	SHUFPS $0, X14, X14
	MOVL   hi+20(FP), AX
	CMPL   AX, $32767
	JLE    hiok
	MOVL   $32767, AX      // no clamp (q5_1): c is far below
hiok:
	MOVL   AX, BX
	SHLL   $16, BX
	ORL    BX, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15     // hi in every word
	MOVQ   q+24(FP), DI

#define CODE(off, R) \
	MOVUPS off(SI), R; \
	SUBPS  X12, R; \
	MULPS  X13, R; \
	ADDPS  X14, R; \
	CVTTPS2PL R, R

	CODE(0, X0)
	CODE(16, X1)
	CODE(32, X2)
	CODE(48, X3)
	CODE(64, X4)
	CODE(80, X5)
	CODE(96, X6)
	CODE(112, X7)
	PACKSSLW X1, X0  // elements 0..7 as int16
	PACKSSLW X3, X2  // 8..15
	PACKSSLW X5, X4  // 16..23
	PACKSSLW X7, X6  // 24..31
	PMINSW X15, X0   // min(c, hi): c is small, so the int16 min is the int32 one
	PMINSW X15, X2
	PMINSW X15, X4
	PMINSW X15, X6
	PACKUSWB X2, X0  // bytes 0..15
	PACKUSWB X6, X4  // bytes 16..31
	// qh: bit 4 of every byte, moved to bit 7 (no bit crosses a byte: values ≤ 31).
	MOVO   X0, X8
	PSLLW  $3, X8
	PMOVMSKB X8, AX
	MOVO   X4, X9
	PSLLW  $3, X9
	PMOVMSKB X9, BX
	SHLL   $16, BX
	ORL    BX, AX
	MOVL   AX, qh+32(FP)
	// nibbles: low 4 bits of 0..15, and of 16..31 shifted up.
	MOVL   $0x0F0F0F0F, AX
	MOVL   AX, X10
	PSHUFL $0, X10, X10
	PAND   X10, X0
	PAND   X10, X4
	PSLLW  $4, X4
	POR    X4, X0
	MOVOU  X0, (DI)
	RET

// func minMaxSSE2(x *float32) (lo, hi float32, amax uint32)
// Minimum and maximum of 32 finite floats (the sign of a zero result is not
// reliable); amax is 0x7f800000 when some element is not finite (then lo and
// hi mean nothing), 0 otherwise.
TEXT ·minMaxSSE2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	MOVUPS 32(SI), X2
	MOVUPS 48(SI), X3
	MOVUPS 64(SI), X4
	MOVUPS 80(SI), X5
	MOVUPS 96(SI), X6
	MOVUPS 112(SI), X7
	// Finite check: some |x| bits above 0x7F7FFFFF (Inf or NaN) make amax
	// 0x7F800000; otherwise amax is 0 (callers only test amax ≥ 0x7F800000).
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	MOVL   $0x7F7FFFFF, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	PXOR   X8, X8
#define NONFINITE(R) \
	MOVO   R, X9; \
	PAND   X15, X9; \
	PCMPGTL X14, X9; \
	POR    X9, X8
	NONFINITE(X0)
	NONFINITE(X1)
	NONFINITE(X2)
	NONFINITE(X3)
	NONFINITE(X4)
	NONFINITE(X5)
	NONFINITE(X6)
	NONFINITE(X7)
	PMOVMSKB X8, AX
	XORL   BX, BX
	TESTL  AX, AX
	JZ     finite
	MOVL   $0x7F800000, BX
finite:
	MOVL   BX, amax+16(FP)
	// min and max
	MOVAPS X0, X8
	MOVAPS X0, X9
	MINPS  X1, X8
	MAXPS  X1, X9
	MINPS  X2, X8
	MAXPS  X2, X9
	MINPS  X3, X8
	MAXPS  X3, X9
	MINPS  X4, X8
	MAXPS  X4, X9
	MINPS  X5, X8
	MAXPS  X5, X9
	MINPS  X6, X8
	MAXPS  X6, X9
	MINPS  X7, X8
	MAXPS  X7, X9
	PSHUFL $0x4E, X8, X10
	MINPS  X10, X8
	PSHUFL $0xB1, X8, X10
	MINPS  X10, X8
	PSHUFL $0x4E, X9, X10
	MAXPS  X10, X9
	PSHUFL $0xB1, X9, X10
	MAXPS  X10, X9
	MOVSS  X8, lo+8(FP)
	MOVSS  X9, hi+12(FP)
	RET

// func firstAbsMaxSSE2(x *float32) (m uint32, idx int)
// The largest |x| of 32 floats as bits (integer order, so NaN counts as
// largest) and the index of the first element with that magnitude.
TEXT ·firstAbsMaxSSE2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	MOVUPS 32(SI), X2
	MOVUPS 48(SI), X3
	MOVUPS 64(SI), X4
	MOVUPS 80(SI), X5
	MOVUPS 96(SI), X6
	MOVUPS 112(SI), X7
	PAND   X15, X0
	PAND   X15, X1
	PAND   X15, X2
	PAND   X15, X3
	PAND   X15, X4
	PAND   X15, X5
	PAND   X15, X6
	PAND   X15, X7
	MOVO   X0, X8
#define IMAX2(R) \
	MOVO   R, X10; \
	PCMPGTL X8, X10; \
	MOVO   R, X9; \
	PAND   X10, X9; \
	PANDN  X8, X10; \
	POR    X9, X10; \
	MOVO   X10, X8
	IMAX2(X1)
	IMAX2(X2)
	IMAX2(X3)
	IMAX2(X4)
	IMAX2(X5)
	IMAX2(X6)
	IMAX2(X7)
	PSHUFL $0x4E, X8, X11
	IMAX2(X11)
	PSHUFL $0xB1, X8, X11
	IMAX2(X11)
	MOVL   X8, m+8(FP)
	// bit i of BX: |x[i]| == m
	XORL   BX, BX
#define EQBITS(R, shift) \
	PCMPEQL X8, R; \
	MOVMSKPS R, AX; \
	SHLL   $shift, AX; \
	ORL    AX, BX
	EQBITS(X0, 0)
	EQBITS(X1, 4)
	EQBITS(X2, 8)
	EQBITS(X3, 12)
	EQBITS(X4, 16)
	EQBITS(X5, 20)
	EQBITS(X6, 24)
	EQBITS(X7, 28)
	BSFL   BX, AX
	MOVQ   AX, idx+16(FP)
	RET

// func q41BlockSSE2(x *float32, q *byte) (d, lo float32, ok bool)
// One q4_1 block when it takes the fast path: all 32 x finite, neither the
// minimum nor the maximum zero (their sign would need the first zero), and
// d = (max-min)/15 and id = 1/d (0 when d is 0) finite. Then it writes the
// nibbles of min(15, int((x-min)·id + 0.5)) to q[:16] and returns d and the
// minimum; otherwise ok is false and nothing is written.
TEXT ·q41BlockSSE2(SB), NOSPLIT, $0-25
	MOVQ   x+0(FP), SI
	MOVQ   q+8(FP), DI
	MOVB   $0, ok+24(FP)
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	MOVUPS 32(SI), X2
	MOVUPS 48(SI), X3
	MOVUPS 64(SI), X4
	MOVUPS 80(SI), X5
	MOVUPS 96(SI), X6
	MOVUPS 112(SI), X7
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	MOVL   $0x7F7FFFFF, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	PXOR   X8, X8
	NONFINITE(X0)
	NONFINITE(X1)
	NONFINITE(X2)
	NONFINITE(X3)
	NONFINITE(X4)
	NONFINITE(X5)
	NONFINITE(X6)
	NONFINITE(X7)
	PMOVMSKB X8, AX
	TESTL  AX, AX
	JNZ    q41slow
	MOVAPS X0, X8
	MOVAPS X0, X9
	MINPS  X1, X8
	MAXPS  X1, X9
	MINPS  X2, X8
	MAXPS  X2, X9
	MINPS  X3, X8
	MAXPS  X3, X9
	MINPS  X4, X8
	MAXPS  X4, X9
	MINPS  X5, X8
	MAXPS  X5, X9
	MINPS  X6, X8
	MAXPS  X6, X9
	MINPS  X7, X8
	MAXPS  X7, X9
	PSHUFL $0x4E, X8, X10
	MINPS  X10, X8
	PSHUFL $0xB1, X8, X10
	MINPS  X10, X8
	PSHUFL $0x4E, X9, X10
	MAXPS  X10, X9
	PSHUFL $0xB1, X9, X10
	MAXPS  X10, X9
	// X8 = lo, X9 = hi in every lane. A zero extreme goes to Go.
	XORPS  X10, X10
	UCOMISS X10, X8
	JEQ    q41slow
	UCOMISS X10, X9
	JEQ    q41slow
	// d = (hi - lo)/15; id = 1/d, or 0 when d == 0.
	MOVAPS X9, X11
	SUBSS  X8, X11
	MOVL   $0x41700000, AX // 15
	MOVL   AX, X12
	DIVSS  X12, X11
	MOVL   X11, AX
	ANDL   $0x7FFFFFFF, AX
	CMPL   AX, $0x7F800000
	JAE    q41slow
	XORPS  X13, X13
	TESTL  AX, AX
	JEQ    q41zero
	MOVL   $0x3F800000, BX // 1
	MOVL   BX, X13
	DIVSS  X11, X13
	MOVL   X13, BX
	ANDL   $0x7FFFFFFF, BX
	CMPL   BX, $0x7F800000
	JAE    q41slow
q41zero:
	MOVSS  X11, d+16(FP)
	MOVSS  X8, lo+20(FP)
	// nibbles(x, lo, id, 0.5, 15)
	MOVAPS X8, X12
	SHUFPS $0, X12, X12
	SHUFPS $0, X13, X13
	MOVL   $0x3F000000, AX // 0.5
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	MOVL   $0x000F000F, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	CODE(0, X0)
	CODE(16, X1)
	CODE(32, X2)
	CODE(48, X3)
	CODE(64, X4)
	CODE(80, X5)
	CODE(96, X6)
	CODE(112, X7)
	PACKSSLW X1, X0
	PACKSSLW X3, X2
	PACKSSLW X5, X4
	PACKSSLW X7, X6
	PMINSW X15, X0
	PMINSW X15, X2
	PMINSW X15, X4
	PMINSW X15, X6
	PACKUSWB X2, X0
	PACKUSWB X6, X4
	PSLLW  $4, X4
	POR    X4, X0
	MOVOU  X0, (DI)
	MOVB   $1, ok+24(FP)
q41slow:
	RET

// func q40BlockSSE2(x *float32, q *byte) (d float32, ok bool)
// One q4_0 block when it takes the fast path: all 32 x finite and not all
// zero, and id = 1/d (0 when d is 0) finite, where d = max/-8 and max is the
// first element of largest magnitude. Then it writes the nibbles of
// min(15, int(x·id + 8.5)) to q[:16] and returns d; otherwise ok is false
// and nothing is written.
TEXT ·q40BlockSSE2(SB), NOSPLIT, $0-21
	MOVQ   x+0(FP), SI
	MOVQ   q+8(FP), DI
	MOVB   $0, ok+20(FP)
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	MOVUPS 32(SI), X2
	MOVUPS 48(SI), X3
	MOVUPS 64(SI), X4
	MOVUPS 80(SI), X5
	MOVUPS 96(SI), X6
	MOVUPS 112(SI), X7
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	MOVL   $0x7F7FFFFF, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	PAND   X15, X0
	PAND   X15, X1
	PAND   X15, X2
	PAND   X15, X3
	PAND   X15, X4
	PAND   X15, X5
	PAND   X15, X6
	PAND   X15, X7
	// Finite: no |x| bits above 0x7F7FFFFF.
	MOVO   X0, X8
	PCMPGTL X14, X8
#define NF2(R) \
	MOVO   R, X9; \
	PCMPGTL X14, X9; \
	POR    X9, X8
	NF2(X1)
	NF2(X2)
	NF2(X3)
	NF2(X4)
	NF2(X5)
	NF2(X6)
	NF2(X7)
	PMOVMSKB X8, AX
	TESTL  AX, AX
	JNZ    q40slow
	// The largest |x| (finite, so MAXPS is exact), in every lane.
	MOVAPS X0, X8
	MAXPS  X1, X8
	MAXPS  X2, X8
	MAXPS  X3, X8
	MAXPS  X4, X8
	MAXPS  X5, X8
	MAXPS  X6, X8
	MAXPS  X7, X8
	PSHUFL $0x4E, X8, X9
	MAXPS  X9, X8
	PSHUFL $0xB1, X8, X9
	MAXPS  X9, X8
	MOVL   X8, AX
	TESTL  AX, AX
	JEQ    q40slow
	// The first element with that magnitude.
	XORL   BX, BX
	EQBITS(X0, 0)
	EQBITS(X1, 4)
	EQBITS(X2, 8)
	EQBITS(X3, 12)
	EQBITS(X4, 16)
	EQBITS(X5, 20)
	EQBITS(X6, 24)
	EQBITS(X7, 28)
	BSFL   BX, AX
	MOVSS  (SI)(AX*4), X11      // max, signed
	MOVL   $0xC1000000, AX      // -8
	MOVL   AX, X12
	DIVSS  X12, X11             // d
	XORPS  X13, X13
	MOVL   X11, AX
	ANDL   $0x7FFFFFFF, AX
	JEQ    q40zero
	MOVL   $0x3F800000, BX      // 1
	MOVL   BX, X13
	DIVSS  X11, X13
	MOVL   X13, BX
	ANDL   $0x7FFFFFFF, BX
	CMPL   BX, $0x7F800000
	JAE    q40slow
q40zero:
	MOVSS  X11, d+16(FP)
	// nibbles(x, 0, id, 8.5, 15)
	XORPS  X12, X12
	SHUFPS $0, X13, X13
	MOVL   $0x41080000, AX      // 8.5
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	MOVL   $0x000F000F, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	CODE(0, X0)
	CODE(16, X1)
	CODE(32, X2)
	CODE(48, X3)
	CODE(64, X4)
	CODE(80, X5)
	CODE(96, X6)
	CODE(112, X7)
	PACKSSLW X1, X0
	PACKSSLW X3, X2
	PACKSSLW X5, X4
	PACKSSLW X7, X6
	PMINSW X15, X0
	PMINSW X15, X2
	PMINSW X15, X4
	PMINSW X15, X6
	PACKUSWB X2, X0
	PACKUSWB X6, X4
	PSLLW  $4, X4
	POR    X4, X0
	MOVOU  X0, (DI)
	MOVB   $1, ok+20(FP)
q40slow:
	RET

// R = int32 of q8_0's rounding of the four floats at off(SI) times X0:
// t = trunc(f), q = t + trunc((f - t) + (f - t)), as encodeQ8_0 computes it.
// Clobbers X9, X10.
#define Q8ROUND(off, R) \
	MOVUPS off(SI), R; \
	MULPS  X0, R; \
	CVTTPS2PL R, X9; \
	CVTPL2PS X9, X10; \
	SUBPS  X10, R; \
	ADDPS  R, R; \
	CVTTPS2PL R, R; \
	PADDL  X9, R

// Sixteen levels from 64(SI)·k on, packed to bytes at 16k(DI).
#define Q8SIXTEEN(k) \
	Q8ROUND(64*k, X1); \
	Q8ROUND(64*k+16, X2); \
	Q8ROUND(64*k+32, X3); \
	Q8ROUND(64*k+48, X4); \
	PACKSSLW X2, X1; \
	PACKSSLW X4, X3; \
	PACKSSWB X3, X1; \
	MOVOU  X1, (16*k)(DI)

// func q8RoundSSE2(x *float32, id float32, q *byte)
// q[j] = int8 of q8_0's rounding of x[j]·id for one block of 32, whose
// products are finite and within ±127(1+ε) (see encodeQ8_0).
TEXT ·q8RoundSSE2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVSS  id+8(FP), X0
	SHUFPS $0, X0, X0
	MOVQ   q+16(FP), DI
	Q8SIXTEEN(0)
	Q8SIXTEEN(1)
	RET

// Y-register form of Q8ROUND: R = int32 of q8_0's rounding of R times Y6,
// the same operations in the same order on eight lanes. Clobbers Y7, Y8.
#define Q8ROUND8(R) \
	VMULPS     Y6, R, R; \
	VCVTTPS2DQ R, Y7; \
	VCVTDQ2PS  Y7, Y8; \
	VSUBPS     Y8, R, R; \
	VADDPS     R, R, R; \
	VCVTTPS2DQ R, R; \
	VPADDD     Y7, R, R

// The dword order that undoes VPACKSSDW's and VPACKSSWB's interleaving of
// the two 128-bit lanes.
DATA q8perm<>+0(SB)/8, $0x0000000400000000
DATA q8perm<>+8(SB)/8, $0x0000000500000001
DATA q8perm<>+16(SB)/8, $0x0000000600000002
DATA q8perm<>+24(SB)/8, $0x0000000700000003
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// BLOCKAMAX loads the block of 32 floats at SI into Y0-Y3, their |x| as
// bits into Y4-Y7 (Y15 holds 0x7FFFFFFF in every lane), and the largest of
// those into every lane of X8 and into BX: amax, as finiteAbsMax finds it
// (finite floats order as their bits). Clobbers Y9.
#define BLOCKAMAX \
	VMOVUPS      0(SI), Y0; \
	VMOVUPS      32(SI), Y1; \
	VMOVUPS      64(SI), Y2; \
	VMOVUPS      96(SI), Y3; \
	VPAND        Y15, Y0, Y4; \
	VPAND        Y15, Y1, Y5; \
	VPAND        Y15, Y2, Y6; \
	VPAND        Y15, Y3, Y7; \
	VPMAXUD      Y5, Y4, Y8; \
	VPMAXUD      Y7, Y6, Y9; \
	VPMAXUD      Y9, Y8, Y8; \
	VEXTRACTI128 $1, Y8, X9; \
	VPMAXUD      X9, X8, X8; \
	VPSHUFD      $0x4E, X8, X9; \
	VPMAXUD      X9, X8, X8; \
	VPSHUFD      $0xB1, X8, X9; \
	VPMAXUD      X9, X8, X8; \
	VMOVD        X8, BX

// func q8EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int)
// Encodes up to n q8_0 blocks of 32 floats from x into the 34-byte blocks
// at q, all but their scales: block i's levels go to q[34i+2:34i+34] and
// its d, amax/127, to d[i]. It stops before the first block that
// encodeQ8_0's fast path does not take (a non-finite element, or an
// 1/d above 3.4e38) and returns the number of blocks encoded.
TEXT ·q8EncodeAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	MOVL         $0x7FFFFFFF, BX
	VMOVD        BX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x42FE0000, BX // 127
	VMOVD        BX, X14
	MOVL         $0x3F800000, BX // 1
	VMOVD        BX, X13
	VMOVDQU      q8perm<>(SB), Y11

q8eloop:
	CMPQ         AX, CX
	JGE          q8edone
	BLOCKAMAX
	CMPL         BX, $0x7F800000
	JAE          q8edone // Inf or NaN
	VDIVSS       X14, X8, X5 // d = amax / 127
	VXORPS       X6, X6, X6 // id = 0 when d is 0
	VMOVD        X5, BX
	TESTL        BX, BX
	JZ           q8ezero
	VDIVSS       X5, X13, X6 // id = 1 / d
	VMOVD        X6, BX
	CMPL         BX, $0x7F7FC99E // float32(3.4e38); id > 0
	JA           q8edone

q8ezero:
	VMOVSS       X5, (DX)(AX*4)
	VBROADCASTSS X6, Y6
	Q8ROUND8(Y0)
	Q8ROUND8(Y1)
	Q8ROUND8(Y2)
	Q8ROUND8(Y3)
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y11, Y0
	VMOVDQU      Y0, 2(DI)
	ADDQ         $128, SI
	ADDQ         $34, DI
	INCQ         AX
	JMP          q8eloop

q8edone:
	MOVQ         AX, done+32(FP)
	VZEROUPPER
	RET

// func q40EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int)
// Encodes up to n q4_0 blocks of 32 floats from x into the 18-byte blocks
// at q, all but their scales: block i's nibbles go to q[18i+2:18i+18] and
// its d, max/-8 with max the first element of the largest magnitude, to
// d[i]. It stops before the first block encodeQ4_0's fast path does not
// take (a non-finite element, or a 1/d that overflows) and returns the
// number of blocks encoded.
TEXT ·q40EncodeAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	MOVL         $0x7FFFFFFF, BX
	VMOVD        BX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0xC1000000, BX // -8
	VMOVD        BX, X14
	MOVL         $0x3F800000, BX // 1
	VMOVD        BX, X13
	MOVL         $0x41080000, BX // 8.5
	VMOVD        BX, X12
	VPBROADCASTD X12, Y12
	MOVL         $15, BX
	VMOVD        BX, X10
	VPBROADCASTD X10, Y10

q40eloop:
	CMPQ         AX, CX
	JGE          q40edone
	BLOCKAMAX
	CMPL         BX, $0x7F800000
	JAE          q40edone // Inf or NaN
	VXORPS       X11, X11, X11 // max = +0 when every element is ±0
	TESTL        BX, BX
	JZ           q40emax
	// The first element of that magnitude, with its sign.
	VINSERTI128  $1, X8, Y8, Y8
	VPCMPEQD     Y8, Y4, Y4
	VMOVMSKPS    Y4, BX
	VPCMPEQD     Y8, Y5, Y5
	VMOVMSKPS    Y5, R8
	SHLL         $8, R8
	ORL          R8, BX
	VPCMPEQD     Y8, Y6, Y6
	VMOVMSKPS    Y6, R8
	SHLL         $16, R8
	ORL          R8, BX
	VPCMPEQD     Y8, Y7, Y7
	VMOVMSKPS    Y7, R8
	SHLL         $24, R8
	ORL          R8, BX
	BSFL         BX, BX
	VMOVSS       (SI)(BX*4), X11

q40emax:
	VDIVSS       X14, X11, X11 // d = max / -8
	VXORPS       X9, X9, X9 // id = 0 when d is ±0
	VMOVD        X11, BX
	ANDL         $0x7FFFFFFF, BX
	JZ           q40ezero
	VDIVSS       X11, X13, X9 // id = 1 / d
	VMOVD        X9, BX
	ANDL         $0x7FFFFFFF, BX
	CMPL         BX, $0x7F800000
	JAE          q40edone

q40ezero:
	VMOVSS       X11, (DX)(AX*4)
	VBROADCASTSS X9, Y9
	// min(15, trunc(x·id + 8.5)); x - 0 is x, so nibbles' subtraction is
	// left out.
	VMULPS       Y9, Y0, Y0
	VADDPS       Y12, Y0, Y0
	VCVTTPS2DQ   Y0, Y0
	VPMINSD      Y10, Y0, Y0
	VMULPS       Y9, Y1, Y1
	VADDPS       Y12, Y1, Y1
	VCVTTPS2DQ   Y1, Y1
	VPMINSD      Y10, Y1, Y1
	VMULPS       Y9, Y2, Y2
	VADDPS       Y12, Y2, Y2
	VCVTTPS2DQ   Y2, Y2
	VPMINSD      Y10, Y2, Y2
	VMULPS       Y9, Y3, Y3
	VADDPS       Y12, Y3, Y3
	VCVTTPS2DQ   Y3, Y3
	VPMINSD      Y10, Y3, Y3
	// Byte j: element j in the low nibble, element j+16 in the high one.
	VPSLLD       $4, Y2, Y2
	VPOR         Y2, Y0, Y0
	VPSLLD       $4, Y3, Y3
	VPOR         Y3, Y1, Y1
	VPACKUSDW    Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSWB    X1, X0, X0
	VPSHUFD      $0xD8, X0, X0
	VMOVDQU      X0, 2(DI)
	ADDQ         $128, SI
	ADDQ         $18, DI
	INCQ         AX
	JMP          q40eloop

q40edone:
	MOVQ         AX, done+32(FP)
	VZEROUPPER
	RET
