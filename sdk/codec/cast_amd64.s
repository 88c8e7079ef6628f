//go:build amd64 && !purego

#include "textflag.h"

// SSE2 kernels for the f16 and bf16 casts: the integer operations of
// Float32ToFloat16, bf16FromBits and BFloat16ToFloat32, four or eight lanes
// at a time, and the same float32 addition for f16 subnormals.

// BROADCAST(imm, R) fills the four dwords of R with imm.
#define BROADCAST(imm, R) \
	MOVL   $imm, AX; \
	MOVL   AX, R; \
	PSHUFL $0, R, R

// func bf16FromF32SSE2(dst, src *byte, n int)
// n float32 at src (n a multiple of 16) to bfloat16 at dst: NaN → (b>>16)|0x40,
// otherwise (b + 0x7FFF + ((b>>16)&1)) >> 16.
TEXT ·bf16FromF32SSE2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	JZ     bdone
	BROADCAST(0x7FFF, X10)
	BROADCAST(0x400000, X14)     // 0x40 in the upper half

// The rounded value is computed in the upper half of each dword and moved
// down with an arithmetic shift, ready for PACKSSLW (which saturates signed
// words, so the halves must come sign-extended).
#define BF16(R) \
	MOVO   R, X4; \
	PSLLL  $15, X4; \
	PSRLL  $31, X4; \
	PADDL  R, X4; \
	PADDL  X10, X4; \
	MOVO   R, X5; \
	CMPPS  R, X5, $3; \
	POR    X14, R; \
	PAND   X5, R; \
	PANDN  X4, X5; \
	POR    X5, R; \
	PSRAL  $16, R

bloop:
	MOVOU  (SI), X0
	MOVOU  16(SI), X1
	MOVOU  32(SI), X2
	MOVOU  48(SI), X3
	BF16(X0)
	BF16(X1)
	BF16(X2)
	BF16(X3)
	PACKSSLW X1, X0
	PACKSSLW X3, X2
	MOVOU  X0, (DI)
	MOVOU  X2, 16(DI)
	ADDQ   $64, SI
	ADDQ   $32, DI
	DECQ   CX
	JNZ    bloop

bdone:
	RET

// func bf16ToF32SSE2(dst, src *byte, n int)
// n bfloat16 at src (n a multiple of 16) to float32 at dst: bits << 16.
TEXT ·bf16ToF32SSE2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	JZ     wdone

wloop:
	MOVOU  (SI), X0
	MOVOU  16(SI), X3
	PXOR   X1, X1
	PXOR   X2, X2
	PXOR   X4, X4
	PXOR   X5, X5
	PUNPCKLWL X0, X1
	PUNPCKHWL X0, X2
	PUNPCKLWL X3, X4
	PUNPCKHWL X3, X5
	MOVOU  X1, (DI)
	MOVOU  X2, 16(DI)
	MOVOU  X4, 32(DI)
	MOVOU  X5, 48(DI)
	ADDQ   $32, SI
	ADDQ   $64, DI
	DECQ   CX
	JNZ    wloop

wdone:
	RET

// func f16FromF32SSE2(dst, src *byte, n int)
// n float32 at src (n a multiple of 16) to binary16 at dst, as
// Float32ToFloat16: with a = |b|,
//   a ≥ 0x477FF000: 0x7E00 for NaN, else 0x7C00;
//   a ≥ 0x38800000: (a - 0x38000000 + 0xFFF + ((a>>13)&1)) >> 13;
//   otherwise the bits of float32(a) + 0.5, minus 0x3F000000;
// then the sign.
TEXT ·f16FromF32SSE2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	JZ     hdone
	BROADCAST(0x7FFFFFFF, X8)
	BROADCAST(0x477FEFFF, X9)  // a > this: ≥ 65520, Inf or NaN
	BROADCAST(0x387FFFFF, X10) // a > this: normal binary16
	BROADCAST(0x7F800000, X11)
	BROADCAST(0xC8000FFF, X12) // 0xFFF - 0x38000000
	BROADCAST(1, X13)
	BROADCAST(0x3F000000, X14) // 0.5, and its bits
	BROADCAST(0x7C00, X15)

#define F16(R) \
	MOVO   R, X7; \
	PAND   X8, R; \
	PXOR   R, X7; \
	PSRLL  $16, X7; \
	MOVO   R, X2; \
	PSRLL  $13, X2; \
	PAND   X13, X2; \
	PADDL  R, X2; \
	PADDL  X12, X2; \
	PSRLL  $13, X2; \
	MOVO   R, X3; \
	ADDPS  X14, X3; \
	PSUBL  X14, X3; \
	MOVO   R, X4; \
	PCMPGTL X10, X4; \
	PAND   X4, X2; \
	PANDN  X3, X4; \
	POR    X2, X4; \
	MOVO   R, X5; \
	PCMPGTL X11, X5; \
	PAND   X13, X5; \
	PSLLL  $9, X5; \
	POR    X15, X5; \
	MOVO   R, X6; \
	PCMPGTL X9, X6; \
	PAND   X6, X5; \
	PANDN  X4, X6; \
	POR    X5, X6; \
	POR    X7, X6; \
	PSLLL  $16, X6; \
	PSRAL  $16, X6; \
	MOVO   X6, R

hloop:
	MOVOU  (SI), X0
	MOVOU  16(SI), X1
	F16(X0)
	F16(X1)
	PACKSSLW X1, X0
	MOVOU  X0, (DI)
	ADDQ   $32, SI
	ADDQ   $16, DI
	DECQ   CX
	JNZ    hloop

hdone:
	RET

// R (four binary16 values zero-extended to 32 bits) = their float32 bits,
// as f16Bits computes them: the exponent and mantissa shifted into place
// and rebiased (twice for infinity and NaN, whose quiet bit is set), zero
// and subnormals through a float32 subtraction of 2^-14 (exact), then the
// sign. Constants in X7-X15 (see f16ToF32SSE2); clobbers X2-X6.
#define F16WIDEN(R) \
	MOVO   R, X2; \
	PAND   X15, X2; \
	MOVO   X2, X3; \
	PCMPGTL X7, X3; \
	PAND   X9, X3; \
	PXOR   X2, R; \
	PSLLL  $16, R; \
	PSLLL  $13, X2; \
	MOVO   X2, X4; \
	PAND   X14, X4; \
	PADDL  X13, X2; \
	MOVO   X4, X5; \
	PCMPEQL X14, X5; \
	PAND   X13, X5; \
	PADDL  X5, X2; \
	PCMPEQL X8, X4; \
	MOVO   X4, X5; \
	PAND   X11, X5; \
	PADDL  X5, X2; \
	MOVO   X2, X6; \
	SUBPS  X10, X6; \
	PXOR   X2, X6; \
	PAND   X4, X6; \
	PXOR   X6, X2; \
	POR    X3, X2; \
	POR    X2, R

// func f16ToF32SSE2(dst, src *byte, n int)
// n binary16 at src (n a multiple of 16) to float32 at dst, exactly as
// f16Bits.
TEXT ·f16ToF32SSE2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	JZ     hdone
	PXOR   X8, X8
	BROADCAST(0x7C00, X7) // infinity's magnitude: above it, NaN
	BROADCAST(0x00400000, X9) // float32's quiet bit
	BROADCAST(0x38800000, X10) // 2^-14
	BROADCAST(0x00800000, X11) // 1 << 23
	BROADCAST(0x38000000, X13) // (127 - 15) << 23
	BROADCAST(0x0F800000, X14) // binary16's exponent, shifted by 13
	BROADCAST(0x7FFF, X15)

hloop:
	MOVOU  (SI), X0
	MOVO   X0, X1
	PUNPCKLWL X8, X0
	PUNPCKHWL X8, X1
	F16WIDEN(X0)
	F16WIDEN(X1)
	MOVOU  X0, (DI)
	MOVOU  X1, 16(DI)
	ADDQ   $16, SI
	ADDQ   $32, DI
	DECQ   CX
	JNZ    hloop

hdone:
	RET

// func f16ToF32F16C(dst, src *byte, n int)
// n binary16 at src (n a multiple of 16) to float32 at dst with F16C's
// VCVTPH2PS, which widens exactly and, as f16Bits, turns a NaN into the
// float32 NaN of the same sign and payload with the quiet bit set.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	MOVQ      n+16(FP), CX
	SHRQ      $4, CX
	JZ        hcdone

hcloop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       hcloop

hcdone:
	VZEROUPPER
	RET

// func bf16ToF32AVX2(dst, src *byte, n int)
// n bfloat16 at src (n a multiple of 16) to float32 at dst: bits << 16,
// eight at a time.
TEXT ·bf16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	MOVQ      n+16(FP), CX
	SHRQ      $4, CX
	JZ        bwdone

bwloop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       bwloop

bwdone:
	VZEROUPPER
	RET

// func f16FromF32F16C(dst, src *byte, n int)
// n float32 at src (n a multiple of 16) to binary16 at dst, as
// Float32ToFloat16: F16C's VCVTPS2PH rounds to nearest even, overflows to
// infinity from 65520 and keeps subnormal results, as it does; a NaN, whose
// payload VCVTPS2PH would keep in part, becomes its sign | 0x7E00.
TEXT ·f16FromF32F16C(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $3, CX
	JZ           hndone
	MOVL         $0x8000, BX
	VMOVD        BX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x7E00, BX
	VMOVD        BX, X14
	VPBROADCASTD X14, Y14

hnloop:
	VMOVUPS      (SI), Y0
	VCVTPS2PH    $0, Y0, X1
	VCMPPS       $3, Y0, Y0, Y2 // unordered: the NaN lanes
	VPSRLD       $16, Y0, Y3
	VPAND        Y15, Y3, Y3
	VPOR         Y14, Y3, Y3 // sign | 0x7E00
	VEXTRACTI128 $1, Y3, X4
	VPACKUSDW    X4, X3, X3
	VEXTRACTI128 $1, Y2, X4
	VPACKSSDW    X4, X2, X2
	VPBLENDVB    X2, X3, X1, X1
	VMOVDQU      X1, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          hnloop

hndone:
	VZEROUPPER
	RET
