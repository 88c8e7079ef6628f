//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 and AVX2 kernels of iq4_nl's and iq4_xs's scale search. Lane t
// of every vector belongs to one trial scale (iq4Trials16AVX512,
// iq4Trials16AVX2) or one element (iq4IndexAVX512, iq4IndexAVX2) and
// performs the scalar code's float32 operations in its order, so the
// results are bit for bit those of iq4Trials.search and bestIndexIQ4.

// IQ4CONSTS loads the codebook as float32 into Z1 and the codebook from its
// second value on (the last repeated) into Z2, the search's steps 8, 4, 2, 1
// and the cap 14 as int32 into Z3–Z7, and the middle value (index 8) into
// every lane of Z18. Clobbers AX.
#define IQ4CONSTS \
	MOVQ         $·iq4Levels(SB), AX; \
	VMOVUPS      (AX), Z1; \
	VMOVUPS      64(AX), Z2; \
	VBROADCASTSS 32(AX), Z18; \
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
// last (or NaN) ml 14 and is not. The first step's value, index 8, is the
// same in every lane (Z18).
#define NEAREST \
	VPXORD    Z13, Z13, Z13; \
	VCMPPS    $5, Z18, Z12, K1; \
	VMOVDQA32 Z3, K1, Z13; \
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
// sq of iq4Trials, and better.
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

	// better[i] = K1 & (sq > best[i]·sumQ2), best[i] broadcast from lane i
	// (Z13, from 0 up by 1 in Z6).
	VPXORD Z13, Z13, Z13
	MOVQ   $16, CX

iq4better:
	VPERMPS Z11, Z13, Z14
	VMULPS  Z9, Z14, Z14
	VCMPPS  $14, Z14, Z12, K1, K2
	KMOVW   K2, AX
	MOVW    AX, 320(DX)
	VPADDD  Z6, Z13, Z13
	ADDQ    $2, DX
	DECQ    CX
	JNZ     iq4better
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

// The AVX2 kernels search the codebook with the rows of iq4Steps (at AX)
// and carry the two neighbours along: LO, the value at the index ML so far,
// and HI, the value at the bound above it. Each step looks up the value
// ML+S (from a row of eight indexed by ML>>SH), and where y is not below it
// (a NaN y never is) moves ML and LO up to it, elsewhere HI down; the fourth
// step may not move to index 15, so a y at or above the last value (or NaN)
// ends at 14 with HI the last value, as ggml's search does.

// Offsets of the rows of iq4Steps.
#define IQ4V0 0
#define IQ4V8 64
#define IQ4T2 128
#define IQ4T3 192
#define IQ4T4 256
#define IQ4S8 320
#define IQ4S4 384
#define IQ4S2 448
#define IQ4S1 512
#define IQ4S7 576

// YSTEP(T, SH, S): one step of the search of y (Y7) over index ML (Y8),
// LO (Y9) and HI (Y10); clobbers Y11 (V), Y12 (M) and Y6 (T).
#define YSTEP(T, SH, S) \
	VPSRLD    $SH, Y8, Y11; \
	VPERMPS   T(AX), Y11, Y11; \
	VCMPPS    $5, Y11, Y7, Y12; \
	VBLENDVPS Y12, Y11, Y9, Y9; \
	VBLENDVPS Y12, Y10, Y11, Y10; \
	VANDPS    S(AX), Y12, Y6; \
	VPADDD    Y6, Y8, Y8

// YNEAREST searches y (Y7): ML (Y8) ends at the index of the last codebook
// value at or below it (capped at 14), LO (Y9) and HI (Y10) at the values
// ML and ML+1, and M (Y12) is set where y is nearer LO (y-lo < hi-y).
#define YNEAREST \
	VMOVUPS   IQ4V0(AX), Y9; \
	VMOVUPS   IQ4V8(AX), Y10; \
	VCMPPS    $5, Y10, Y7, Y12; \
	VBLENDVPS Y12, Y10, Y9, Y9; \
	VANDPS    IQ4S8(AX), Y12, Y8; \
	YSTEP(IQ4T2, 3, IQ4S4); \
	YSTEP(IQ4T3, 2, IQ4S2); \
	VPSRLD    $1, Y8, Y6; \
	VPERMPS   IQ4T4(AX), Y6, Y11; \
	VCMPPS    $5, Y11, Y7, Y12; \
	VPCMPEQD  IQ4S7(AX), Y6, Y6; \
	VPANDN    Y12, Y6, Y12; \
	VBLENDVPS Y12, Y11, Y9, Y9; \
	VBLENDVPS Y12, Y10, Y11, Y10; \
	VANDPS    IQ4S1(AX), Y12, Y6; \
	VPADDD    Y6, Y8, Y8; \
	VSUBPS    Y9, Y7, Y6; \
	VSUBPS    Y7, Y10, Y11; \
	VCMPPS    $1, Y11, Y6, Y12

// YTRIALS(OFF, SQX, SQ2) runs the eight trials ids[OFF/4…] on element x
// (Y0, its square in Y1) and adds to their sums in SQX and SQ2.
#define YTRIALS(OFF, SQX, SQ2) \
	VMULPS    OFF(DI), Y0, Y7; \
	YNEAREST; \
	VBLENDVPS Y12, Y9, Y10, Y10; \
	VMULPS    Y10, Y1, Y6; \
	VMULPS    Y0, Y6, Y11; \
	VADDPS    Y11, SQX, SQX; \
	VMULPS    Y10, Y6, Y11; \
	VADDPS    Y11, SQ2, SQ2

// YFINISH(OFF, SQX, SQ2) stores the sums of eight trials and their d, best
// and sq at OFF in iq4Trials (DX).
#define YFINISH(OFF, SQX, SQ2) \
	VXORPS  Y6, Y6, Y6; \
	VCMPPS  $1, SQ2, Y6, Y12; \
	VDIVPS  SQ2, SQX, Y11; \
	VANDPS  Y12, Y11, Y11; \
	VMULPS  SQX, Y11, Y6; \
	VMULPS  SQX, SQX, Y7; \
	VMOVUPS SQX, OFF(DX); \
	VMOVUPS SQ2, (64+OFF)(DX); \
	VMOVUPS Y11, (128+OFF)(DX); \
	VMOVUPS Y6, (192+OFF)(DX); \
	VMOVUPS Y7, (256+OFF)(DX)

// YBETTER(I) sets better[I] (iq4Trials at DX) from best[I] and the sixteen
// trials' sumQ2 (Y3, Y5), sq and the lanes where 0 < sumQ2 (Y13, Y15 and
// Y12, Y14, kept by the caller). Clobbers Y6, Y7, AX, BX.
#define YBETTER(I) \
	VBROADCASTSS (192+4*I)(DX), Y6; \
	VMULPS       Y3, Y6, Y7; \
	VCMPPS       $14, Y7, Y13, Y7; \
	VANDPS       Y12, Y7, Y7; \
	VMOVMSKPS    Y7, AX; \
	VMULPS       Y5, Y6, Y7; \
	VCMPPS       $14, Y7, Y15, Y7; \
	VANDPS       Y14, Y7, Y7; \
	VMOVMSKPS    Y7, BX; \
	SHLL         $8, BX; \
	ORL          BX, AX; \
	MOVW         AX, (320+2*I)(DX)

// func iq4Trials16AVX2(x *float32, ids *[16]float32, tr *iq4Trials)
//
// iq4Trials16AVX512 with the sixteen trials in two vectors of eight.
TEXT ·iq4Trials16AVX2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   ids+8(FP), DI
	MOVQ   tr+16(FP), DX
	MOVQ   $·iq4Steps(SB), AX
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	MOVQ   $32, CX

iq4trials2:
	VBROADCASTSS (SI), Y0
	VMULPS       Y0, Y0, Y1
	YTRIALS(0, Y2, Y3)
	YTRIALS(32, Y4, Y5)
	ADDQ         $4, SI
	DECQ         CX
	JNZ          iq4trials2
	YFINISH(0, Y2, Y3)
	YFINISH(32, Y4, Y5)
	VMULPS  Y2, Y2, Y13
	VMULPS  Y4, Y4, Y15
	VXORPS  Y6, Y6, Y6
	VCMPPS  $1, Y3, Y6, Y12
	VCMPPS  $1, Y5, Y6, Y14
	YBETTER(0)
	YBETTER(1)
	YBETTER(2)
	YBETTER(3)
	YBETTER(4)
	YBETTER(5)
	YBETTER(6)
	YBETTER(7)
	YBETTER(8)
	YBETTER(9)
	YBETTER(10)
	YBETTER(11)
	YBETTER(12)
	YBETTER(13)
	YBETTER(14)
	YBETTER(15)
	VZEROUPPER
	RET

// func iq4IndexAVX2(L *uint8, x *float32, id float32, n int)
//
// iq4IndexAVX512 eight elements at a time, n a multiple of 8.
TEXT ·iq4IndexAVX2(SB), NOSPLIT, $0-32
	MOVQ         L+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS id+16(FP), Y0
	MOVQ         n+24(FP), CX
	MOVQ         $·iq4Steps(SB), AX

iq4index2:
	VMULPS       (SI), Y0, Y7
	YNEAREST
	// The index is ML where y is nearer LO (M all ones, -1), else ML+1.
	VPADDD       IQ4S1(AX), Y8, Y8
	VPADDD       Y12, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPACKSSDW    X9, X8, X8
	VPACKUSWB    X8, X8, X8
	VMOVQ         X8, (DI)
	ADDQ         $32, SI
	ADDQ         $8, DI
	SUBQ         $8, CX
	JNZ          iq4index2
	VZEROUPPER
	RET
