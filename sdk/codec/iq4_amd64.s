//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 kernels of iq4_nl's and iq4_xs's scale search. Lane t of every
// vector belongs to one trial scale (iq4Trials16AVX512) or one element
// (iq4IndexAVX512) and performs the scalar code's float32 operations in its
// order, so the results are bit for bit those of iq4Trials.search and
// bestIndexIQ4.

// IQ4CONSTS loads the codebook as float32 into Z1 and the codebook from its
// second value on (the last repeated) into Z2, and the search's steps 8, 4,
// 2, 1 and the cap 14 as int32 into Z3–Z7. Clobbers AX.
#define IQ4CONSTS \
	MOVQ         $·iq4Levels(SB), AX; \
	VMOVUPS      (AX), Z1; \
	VMOVUPS      64(AX), Z2; \
	MOVL         $8, AX; \
	VPBROADCASTD AX, Z3; \
	MOVL         $4, AX; \
	VPBROADCASTD AX, Z4; \
	MOVL         $2, AX; \
	VPBROADCASTD AX, Z5; \
	MOVL         $1, AX; \
	VPBROADCASTD AX, Z6; \
	MOVL         $14, AX; \
	VPBROADCASTD AX, Z7

// STEP(S) adds S to the index in Z13 in the lanes whose y (Z12) is not
// below the codebook value at index+S: !(y < v), true for a NaN y, as
// ggml's binary search moves up for a NaN.
#define STEP(S) \
	VPADDD    S, Z13, Z15; \
	VPERMPS   Z1, Z15, Z14; \
	VCMPPS    $5, Z14, Z12, K1; \
	VMOVDQA32 Z15, K1, Z13

// NEAREST leaves in Z13 the index ml of the last codebook value at or below
// y (Z12), capped at 14, in Z14 the value ml and in Z15 the value ml+1, and
// in K2 the lanes where y is nearer the lower one (y-lo < hi-y), whose
// index is ml; the others' is ml+1. That is best_index_int8 of ggml: a y at
// or below the first value has ml 0 and is nearer it, one at or above the
// last (or NaN) ml 14 and is not.
#define NEAREST \
	VPXORD    Z13, Z13, Z13; \
	STEP(Z3); \
	STEP(Z4); \
	STEP(Z5); \
	STEP(Z6); \
	VPMINSD   Z7, Z13, Z13; \
	VPERMPS   Z1, Z13, Z14; \
	VPERMPS   Z2, Z13, Z15; \
	VSUBPS    Z14, Z12, Z16; \
	VSUBPS    Z12, Z15, Z17; \
	VCMPPS    $1, Z17, Z16, K2

// func iq4Trials16AVX512(x *float32, ids *[16]float32, tr *iq4Trials)
//
// For the 32 elements at x and each of the 16 inverse scales ids[t]: with
// q the codebook value nearest ids[t]·x[j] and w = x[j]², the sums over j,
// in order, of (w·q)·x[j] (sumQX) and of (w·q)·q (sumQ2), then d, best and
// sq of iq4Trials.
TEXT ·iq4Trials16AVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ ids+8(FP), DI
	MOVQ tr+16(FP), DX
	IQ4CONSTS
	VMOVUPS (DI), Z0
	VPXORD  Z8, Z8, Z8
	VPXORD  Z9, Z9, Z9
	MOVQ    $32, CX

iq4trials:
	VBROADCASTSS (SI), Z10
	VMULPS       Z10, Z10, Z11
	VMULPS       Z10, Z0, Z12
	NEAREST
	VMOVAPS      Z14, K2, Z15
	VMULPS       Z15, Z11, Z11
	VMULPS       Z10, Z11, Z16
	VADDPS       Z16, Z8, Z8
	VMULPS       Z15, Z11, Z17
	VADDPS       Z17, Z9, Z9
	ADDQ         $4, SI
	DECQ         CX
	JNZ          iq4trials

	// d = sumQX/sumQ2 where 0 < sumQ2 (K1), else 0; best = d·sumQX;
	// sq = sumQX·sumQX.
	VPXORD  Z10, Z10, Z10
	VCMPPS  $1, Z9, Z10, K1
	VDIVPS  Z9, Z8, K1, Z10
	VMULPS  Z8, Z10, Z11
	VMULPS  Z8, Z8, Z12
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	VMOVUPS Z10, 128(DX)
	VMOVUPS Z11, 192(DX)
	VMOVUPS Z12, 256(DX)
	VZEROUPPER
	RET

// func iq4IndexAVX512(L *uint8, x *float32, id float32, n int)
//
// L[j] = bestIndexIQ4(id·x[j]) for j < n, n a multiple of 16.
TEXT ·iq4IndexAVX512(SB), NOSPLIT, $0-32
	MOVQ         L+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS id+16(FP), Z0
	MOVQ         n+24(FP), CX
	IQ4CONSTS

iq4index:
	VMOVUPS   (SI), Z12
	VMULPS    Z0, Z12, Z12
	NEAREST
	VPADDD    Z6, Z13, Z16
	VMOVDQA32 Z13, K2, Z16
	VPMOVDB   Z16, (DI)
	ADDQ      $64, SI
	ADDQ      $16, DI
	SUBQ      $16, CX
	JNZ       iq4index
	VZEROUPPER
	RET
