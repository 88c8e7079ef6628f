//go:build amd64 && !purego

#include "textflag.h"

// Four-group SSE2 kernels for the q6_K and q3_K scale searches. Lane g of
// every vector belongs to group g: element i of the four groups is one
// vector, so each lane performs exactly the scalar code's float32
// operations in the scalar code's order (see quads in kquants4.go).

// HEXDONE(SC) ends qxSearch16AVX512 and q3Search16AVX512, whose arguments
// L, scales and nmax are at the same offsets: the scales in SC to scales,
// the levels to L (HEXOUT).
#define HEXDONE(SC) \
	MOVQ    scales+48(FP), R8; \
	VMOVUPS SC, (R8); \
	MOVQ    L+40(FP), R8; \
	MOVL    nmax+80(FP), R9; \
	HEXOUT(R8, R9)

// The first two stages of a transpose of rows R0-R3 (ymm or zmm): TPAIRS
// interleaves the rows' elements in pairs, T0 = R0 and R1's low pairs of
// each 128-bit lane, T1 their high pairs, T2 and T3 those of R2 and R3;
// TQUADS makes S0-S3 the columns 4m, 4m+1, 4m+2, 4m+3 of the four rows in
// 128-bit lane m.
#define TPAIRS(R0, R1, R2, R3, T0, T1, T2, T3) \
	VUNPCKLPS R1, R0, T0; \
	VUNPCKHPS R1, R0, T1; \
	VUNPCKLPS R3, R2, T2; \
	VUNPCKHPS R3, R2, T3

#define TQUADS(T0, T1, T2, T3, S0, S1, S2, S3) \
	VSHUFPS $0x44, T2, T0, S0; \
	VSHUFPS $0xEE, T2, T0, S1; \
	VSHUFPS $0x44, T3, T1, S2; \
	VSHUFPS $0xEE, T3, T1, S3

// T8 transposes the 8×8 block in Y0-Y7 (row r in Yr) into Y8-Y15 (column
// c in Y(8+c)): pairs, quads, then 128-bit halves. Clobbers Y0-Y7.
#define T8() \
	TPAIRS(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11); \
	TPAIRS(Y4, Y5, Y6, Y7, Y12, Y13, Y14, Y15); \
	TQUADS(Y8, Y9, Y10, Y11, Y0, Y1, Y2, Y3); \
	TQUADS(Y12, Y13, Y14, Y15, Y4, Y5, Y6, Y7); \
	VPERM2F128 $0x20, Y4, Y0, Y8; \
	VPERM2F128 $0x20, Y5, Y1, Y9; \
	VPERM2F128 $0x20, Y6, Y2, Y10; \
	VPERM2F128 $0x20, Y7, Y3, Y11; \
	VPERM2F128 $0x31, Y4, Y0, Y12; \
	VPERM2F128 $0x31, Y5, Y1, Y13; \
	VPERM2F128 $0x31, Y6, Y2, Y14; \
	VPERM2F128 $0x31, Y7, Y3, Y15

// Offsets of the fields of quads.
#define QX 0
#define QW 256
#define QWX 512
#define QCUR 768
#define QL 1024
#define QMX 1280
#define QSCALE 1296

// X3 = 1.5·2^23, X4 = 0x7FFFFF, X5 = 0x400000: nearestInt's constants.
// Clobbers R.
#define NCONSTS(R) \
	MOVL   $0x4B400000, R; \
	MOVL   R, X3; \
	PSHUFL $0, X3, X3; \
	MOVL   $0x007FFFFF, R; \
	MOVL   R, X4; \
	PSHUFL $0, X4, X4; \
	MOVL   $0x00400000, R; \
	MOVL   R, X5; \
	PSHUFL $0, X5, X5

// Registers shared by both kernels: NCONSTS, X6 = lo, X7 = hi.
#define CONSTS \
	NCONSTS(AX); \
	MOVL   lo+24(FP), AX; \
	MOVL   AX, X6; \
	PSHUFL $0, X6, X6; \
	MOVL   hi+28(FP), AX; \
	MOVL   AX, X7; \
	PSHUFL $0, X7, X7

// R = float32(clamp(nearestInt(R), lo, hi)); clobbers T1, T2.
#define ROUNDCLAMP(R, T1, T2) \
	ADDPS  X3, R; \
	PAND   X4, R; \
	PSUBL  X5, R; \
	MOVO   X6, T1; \
	PCMPGTL R, T1; \
	MOVO   T1, T2; \
	PAND   X6, T2; \
	PANDN  R, T1; \
	POR    T2, T1; \
	MOVO   T1, R; \
	PCMPGTL X7, T1; \
	MOVO   T1, T2; \
	PAND   X7, T2; \
	PANDN  R, T1; \
	POR    T2, T1; \
	CVTPL2PS T1, R

// R = nearestInt(A·X0) as int32 (X3 = 1.5·2^23, X4 = 0x7FFFFF,
// X5 = 0x400000).
#define NEARESTI(A, R) \
	MOVUPS A, R; \
	MULPS  X0, R; \
	ADDPS  X3, R; \
	PAND   X4, R; \
	PSUBL  X5, R

// The int32 of R1 and R2 packed into R1 as int16 with signed saturation,
// which keeps every value's clamp to a range inside int16, and clamped to
// [X6, X7] (lo and hi in every 16-bit lane).
#define PACKCLAMP(R1, R2) \
	PACKSSLW R2, R1; \
	PMAXSW X6, R1; \
	PMINSW X7, R1

// D = M ? S : D, lane by lane, for memory operands D and S; clobbers T, U.
#define SELECT(D, S, M, T, U) \
	MOVUPS D, T; \
	MOVUPS S, U; \
	XORPS  T, U; \
	ANDPS  M, U; \
	XORPS  U, T; \
	MOVUPS T, D

// Levels of element i at iscale X0 into DST(off), adding to the sums
// X1 += wx·l and X2 += (w·l)·l.
#define LEVEL(off, DST) \
	MOVUPS (QX+off)(DI), X8; \
	MULPS  X0, X8; \
	ROUNDCLAMP(X8, X9, X10); \
	MOVUPS X8, (DST+off)(DI); \
	MOVUPS (QWX+off)(DI), X9; \
	MULPS  X8, X9; \
	ADDPS  X9, X1; \
	MOVUPS (QW+off)(DI), X10; \
	MULPS  X8, X10; \
	MULPS  X8, X10; \
	ADDPS  X10, X2

#define LEVELS(DST) \
	XORPS  X1, X1; \
	XORPS  X2, X2; \
	LEVEL(0, DST); LEVEL(16, DST); LEVEL(32, DST); LEVEL(48, DST); \
	LEVEL(64, DST); LEVEL(80, DST); LEVEL(96, DST); LEVEL(112, DST); \
	LEVEL(128, DST); LEVEL(144, DST); LEVEL(160, DST); LEVEL(176, DST); \
	LEVEL(192, DST); LEVEL(208, DST); LEVEL(224, DST); LEVEL(240, DST)

// Levels of elements off and off+16 at iscale X0 into DST(off), adding to
// the sums X1 += wx·l and X2 += (w·l)·l, element off first. nearestInt's
// int32 results are packed to int16 with signed saturation, which keeps
// every value's clamp to [lo, hi] (X6 = lo, X7 = hi in every 16-bit lane,
// see QXCONSTS), clamped, and sign-extended again. Clobbers X8-X10, X14.
#define LEVEL2(off, DST) \
	NEARESTI((QX+off)(DI), X8); \
	NEARESTI((QX+off+16)(DI), X9); \
	PACKCLAMP(X8, X9); \
	MOVO   X8, X14; \
	PUNPCKLWL X8, X8; \
	PUNPCKHWL X14, X14; \
	PSRAL  $16, X8; \
	PSRAL  $16, X14; \
	CVTPL2PS X8, X8; \
	CVTPL2PS X14, X14; \
	MOVUPS X8, (DST+off)(DI); \
	MOVUPS X14, (DST+off+16)(DI); \
	QXSUMS(off, X8); \
	QXSUMS(off+16, X14)

// Adds level R of element off to X1 (wx·l) and X2 ((w·l)·l); clobbers X9,
// X10.
#define QXSUMS(off, R) \
	MOVUPS (QWX+off)(DI), X9; \
	MULPS  R, X9; \
	ADDPS  X9, X1; \
	MOVUPS (QW+off)(DI), X10; \
	MULPS  R, X10; \
	MULPS  R, X10; \
	ADDPS  X10, X2

#define LEVELS2(DST) \
	XORPS  X1, X1; \
	XORPS  X2, X2; \
	LEVEL2(0, DST); LEVEL2(32, DST); LEVEL2(64, DST); LEVEL2(96, DST); \
	LEVEL2(128, DST); LEVEL2(160, DST); LEVEL2(192, DST); LEVEL2(224, DST)

// CONSTS with lo and hi in every 16-bit lane of X6 and X7 (for LEVEL2).
#define QXCONSTS \
	CONSTS; \
	PSHUFLW $0, X6, X6; \
	PSHUFL $0, X6, X6; \
	PSHUFLW $0, X7, X7; \
	PSHUFL $0, X7, X7

// L(off) = cur(off) in the lanes of mask X9.
#define TAKE(off) \
	SELECT((QL+off)(DI), (QCUR+off)(DI), X9, X10, X8)

// func qxSearch4SSE2(s *quads, num *float32, n int, lo, hi int32)
// make_qx_quants (rmse_type 1, w = x²) for four groups of 16: candidate 0
// (iscale = num[0]/mx) is taken as the start, candidates 1..n-1 are kept
// when suml2 > 0 and sumlx² > best·suml2. Levels (not offset) go to s.L as
// float32, the scales to s.scale.
TEXT ·qxSearch4SSE2(SB), NOSPLIT, $0-32
	MOVQ   s+0(FP), DI
	MOVQ   num+8(FP), SI
	MOVQ   n+16(FP), CX
	QXCONSTS
	MOVUPS QMX(DI), X13
	// Start: iscale = num[0]/mx.
	MOVSS  (SI), X0
	SHUFPS $0, X0, X0
	DIVPS  X13, X0
	LEVELS2(QL)
	// scale = suml2 != 0 ? sumlx/suml2 : 0; best = scale·sumlx.
	MOVAPS X1, X11
	DIVPS  X2, X11
	MOVAPS X2, X9
	XORPS  X10, X10
	CMPPS  X10, X9, $4     // suml2 != 0 (NaN too)
	ANDPS  X9, X11
	MOVAPS X11, X12
	MULPS  X1, X12
	DECQ   CX
	JLE    done

cand:
	ADDQ   $4, SI
	MOVSS  (SI), X0
	SHUFPS $0, X0, X0
	DIVPS  X13, X0
	LEVELS2(QCUR)
	// mask = 0 < suml2 && best·suml2 < sumlx·sumlx
	MOVAPS X1, X8
	MULPS  X1, X8
	MOVAPS X12, X9
	MULPS  X2, X9
	CMPPS  X8, X9, $1
	XORPS  X10, X10
	CMPPS  X2, X10, $1
	ANDPS  X10, X9
	MOVMSKPS X9, AX
	TESTL  AX, AX
	JZ     next
	// Accept: scale = sumlx/suml2, best = scale·sumlx, L = cur.
	MOVAPS X1, X14
	DIVPS  X2, X14
	MOVAPS X14, X15
	MULPS  X1, X15
	XORPS  X11, X14
	ANDPS  X9, X14
	XORPS  X14, X11
	XORPS  X12, X15
	ANDPS  X9, X15
	XORPS  X15, X12
	TAKE(0); TAKE(16); TAKE(32); TAKE(48)
	TAKE(64); TAKE(80); TAKE(96); TAKE(112)
	TAKE(128); TAKE(144); TAKE(160); TAKE(176)
	TAKE(192); TAKE(208); TAKE(224); TAKE(240)

next:
	DECQ   CX
	JNZ    cand

done:
	MOVUPS X11, QSCALE(DI)
	RET

// One greedy step of make_q3_quants for element off, in every lane:
//   li = L; slx = sumlx - wx·li; sl2 = suml2 - (w·li)·li
//   new = clamp(nearestInt((x·sl2)/slx)); slx' = slx + wx·new; sl2' = sl2 + (w·new)·new
//   take when slx > 0, new != li, sl2' > 0 and (slx'·slx')·suml2 > (sumlx·sumlx)·sl2'.
// X1 = sumlx, X2 = suml2, X0 accumulates the lanes that changed.
#define GREEDY(off) \
	MOVUPS (QL+off)(DI), X8; \
	MOVUPS (QWX+off)(DI), X9; \
	MULPS  X8, X9; \
	MOVAPS X1, X10; \
	SUBPS  X9, X10; \
	XORPS  X11, X11; \
	CMPPS  X10, X11, $1; \
	MOVUPS (QW+off)(DI), X12; \
	MULPS  X8, X12; \
	MULPS  X8, X12; \
	MOVAPS X2, X13; \
	SUBPS  X12, X13; \
	MOVUPS (QX+off)(DI), X14; \
	MULPS  X13, X14; \
	DIVPS  X10, X14; \
	ROUNDCLAMP(X14, X9, X12); \
	MOVAPS X14, X15; \
	CMPPS  X8, X15, $4; \
	ANDPS  X15, X11; \
	MOVUPS (QWX+off)(DI), X9; \
	MULPS  X14, X9; \
	ADDPS  X9, X10; \
	MOVUPS (QW+off)(DI), X12; \
	MULPS  X14, X12; \
	MULPS  X14, X12; \
	ADDPS  X12, X13; \
	XORPS  X9, X9; \
	CMPPS  X13, X9, $1; \
	ANDPS  X9, X11; \
	MOVAPS X10, X9; \
	MULPS  X10, X9; \
	MULPS  X2, X9; \
	MOVAPS X1, X12; \
	MULPS  X1, X12; \
	MULPS  X13, X12; \
	CMPPS  X9, X12, $1; \
	ANDPS  X12, X11; \
	ORPS   X11, X0; \
	XORPS  X8, X14; \
	ANDPS  X11, X14; \
	XORPS  X14, X8; \
	MOVUPS X8, (QL+off)(DI); \
	XORPS  X1, X10; \
	ANDPS  X11, X10; \
	XORPS  X10, X1; \
	XORPS  X2, X13; \
	ANDPS  X11, X13; \
	XORPS  X13, X2

// func q3Search4SSE2(s *quads, start float32, rounds int, lo, hi int32)
// make_q3_quants with do_rmse (w = x²) for four groups of 16: levels at
// iscale = start/mx, then up to rounds greedy rounds, stopping when no lane
// changes (a lane whose round changed nothing would change nothing again).
// Levels (not offset) go to s.L as float32, the scales to s.scale.
TEXT ·q3Search4SSE2(SB), NOSPLIT, $0-32
	MOVQ   s+0(FP), DI
	MOVQ   rounds+16(FP), CX
	CONSTS
	MOVSS  start+8(FP), X0
	SHUFPS $0, X0, X0
	MOVUPS QMX(DI), X13
	DIVPS  X13, X0
	LEVELS(QL)
	TESTQ  CX, CX
	JLE    final

round:
	XORPS  X0, X0
	GREEDY(0); GREEDY(16); GREEDY(32); GREEDY(48)
	GREEDY(64); GREEDY(80); GREEDY(96); GREEDY(112)
	GREEDY(128); GREEDY(144); GREEDY(160); GREEDY(176)
	GREEDY(192); GREEDY(208); GREEDY(224); GREEDY(240)
	MOVMSKPS X0, AX
	TESTL  AX, AX
	JZ     final
	DECQ   CX
	JNZ    round

final:
	// scale = suml2 > 0 ? sumlx/suml2 : 0
	MOVAPS X1, X9
	DIVPS  X2, X9
	XORPS  X10, X10
	CMPPS  X2, X10, $1
	ANDPS  X10, X9
	MOVUPS X9, QSCALE(DI)
	RET

#define QAMAX 1312

// Transposes rows A, B, C, D (elements 4k..4k+3 of groups 0..3): the
// columns (element 4k+j of the four groups) end up in B, D, T, C for
// j = 0..3. A is clobbered.
#define TRANSPOSE(A, B, C, D, T, U) \
	MOVAPS A, T; \
	UNPCKLPS B, T; \
	UNPCKHPS B, A; \
	MOVAPS C, U; \
	UNPCKLPS D, U; \
	UNPCKHPS D, C; \
	MOVAPS T, B; \
	MOVLHPS U, B; \
	MOVAPS U, D; \
	MOVHLPS T, D; \
	MOVAPS A, T; \
	MOVLHPS C, T; \
	MOVHLPS A, C

// One column R of element off: store x, w = x·x, wx = w·x, and keep the
// first largest |x| of each lane in X14 and its value in X15 (a NaN never
// compares larger).
#define COLUMN(off, R) \
	MOVUPS R, (QX+off)(DI); \
	MOVAPS R, X8; \
	MULPS  R, X8; \
	MOVUPS X8, (QW+off)(DI); \
	MULPS  R, X8; \
	MOVUPS X8, (QWX+off)(DI); \
	MOVAPS R, X9; \
	ANDPS  X13, X9; \
	MOVAPS X14, X10; \
	CMPPS  X9, X10, $1; \
	XORPS  X14, X9; \
	ANDPS  X10, X9; \
	XORPS  X9, X14; \
	MOVAPS R, X11; \
	XORPS  X15, X11; \
	ANDPS  X10, X11; \
	XORPS  X11, X15

#define LOADK(k) \
	MOVUPS (16*k)(SI), X0; \
	MOVUPS (64+16*k)(SI), X1; \
	MOVUPS (128+16*k)(SI), X2; \
	MOVUPS (192+16*k)(SI), X3; \
	TRANSPOSE(X0, X1, X2, X3, X4, X5); \
	COLUMN(64*k, X1); \
	COLUMN(64*k+16, X3); \
	COLUMN(64*k+32, X4); \
	COLUMN(64*k+48, X2)

// func quadsLoadSSE2(s *quads, x *float32)
// Fills s.x, s.w, s.wx from four consecutive groups of 16 at x, and s.mx,
// s.amax with each group's first element of largest magnitude (ggml's
// `if (ax > amax) { amax = ax; max = x; }`).
TEXT ·quadsLoadSSE2(SB), NOSPLIT, $0-16
	MOVQ   s+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X13
	PSHUFL $0, X13, X13
	XORPS  X14, X14
	XORPS  X15, X15
	LOADK(0)
	LOADK(1)
	LOADK(2)
	LOADK(3)
	MOVUPS X15, QMX(DI)
	MOVUPS X14, QAMAX(DI)
	RET

// func divRoundSSE2(L *int8, x *float32, add, d float32, lo, hi, off int32)
// L[i] = int8(clamp(nearestInt((x[i]+add)/d), lo, hi) + off) for 16 elements.
TEXT ·divRoundSSE2(SB), NOSPLIT, $0-36
	MOVQ   L+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVSS  add+16(FP), X13
	SHUFPS $0, X13, X13
	MOVSS  d+20(FP), X0
	SHUFPS $0, X0, X0
	NCONSTS(AX)
	MOVL   lo+24(FP), AX
	MOVL   AX, X6
	PSHUFL $0, X6, X6
	MOVL   hi+28(FP), AX
	MOVL   AX, X7
	PSHUFL $0, X7, X7
	MOVL   off+32(FP), AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8

#define DIVROUND(off, R) \
	MOVUPS off(SI), R; \
	ADDPS  X13, R; \
	DIVPS  X0, R; \
	ADDPS  X3, R; \
	PAND   X4, R; \
	PSUBL  X5, R; \
	MOVO   X6, X9; \
	PCMPGTL R, X9; \
	MOVO   X9, X10; \
	PAND   X6, X10; \
	PANDN  R, X9; \
	POR    X10, X9; \
	MOVO   X9, R; \
	PCMPGTL X7, X9; \
	MOVO   X9, X10; \
	PAND   X7, X10; \
	PANDN  R, X9; \
	POR    X10, X9; \
	PADDL  X8, X9; \
	MOVO   X9, R

	DIVROUND(0, X1)
	DIVROUND(16, X2)
	DIVROUND(32, X11)
	DIVROUND(48, X12)
	PACKSSLW X2, X1
	PACKSSLW X12, X11
	PACKSSWB X11, X1
	MOVOU  X1, (DI)
	RET

// The eight-group q3 kernel keeps its constants in 16-byte aligned stack
// memory at R9 (magic, mantissa mask, 0x400000, lo, hi) so that two quads'
// sums fit in the registers: the two quads' chains are independent, so the
// CPU overlaps them.
#define MROUNDCLAMP(R, T1, T2) \
	ADDPS  0(R9), R; \
	PAND   16(R9), R; \
	PSUBL  32(R9), R; \
	MOVO   48(R9), T1; \
	PCMPGTL R, T1; \
	MOVO   T1, T2; \
	PAND   48(R9), T2; \
	PANDN  R, T1; \
	POR    T2, T1; \
	MOVO   T1, R; \
	PCMPGTL 64(R9), T1; \
	MOVO   T1, T2; \
	PAND   64(R9), T2; \
	PANDN  R, T1; \
	POR    T2, T1; \
	CVTPL2PS T1, R

#define MLEVEL(off, B, S1, S2) \
	MOVUPS (QX+off)(B), X8; \
	MULPS  X0, X8; \
	MROUNDCLAMP(X8, X9, X10); \
	MOVUPS X8, (QL+off)(B); \
	MOVUPS (QWX+off)(B), X9; \
	MULPS  X8, X9; \
	ADDPS  X9, S1; \
	MOVUPS (QW+off)(B), X10; \
	MULPS  X8, X10; \
	MULPS  X8, X10; \
	ADDPS  X10, S2

#define MLEVELS(B, S1, S2) \
	MOVUPS QMX(B), X9; \
	MOVAPS X7, X0; \
	DIVPS  X9, X0; \
	XORPS  S1, S1; \
	XORPS  S2, S2; \
	MLEVEL(0, B, S1, S2); MLEVEL(16, B, S1, S2); MLEVEL(32, B, S1, S2); MLEVEL(48, B, S1, S2); \
	MLEVEL(64, B, S1, S2); MLEVEL(80, B, S1, S2); MLEVEL(96, B, S1, S2); MLEVEL(112, B, S1, S2); \
	MLEVEL(128, B, S1, S2); MLEVEL(144, B, S1, S2); MLEVEL(160, B, S1, S2); MLEVEL(176, B, S1, S2); \
	MLEVEL(192, B, S1, S2); MLEVEL(208, B, S1, S2); MLEVEL(224, B, S1, S2); MLEVEL(240, B, S1, S2)

// GREEDY with base register B, sums S1 (sumlx) and S2 (suml2).
#define MGREEDY(off, B, S1, S2) \
	MOVUPS (QL+off)(B), X8; \
	MOVUPS (QWX+off)(B), X9; \
	MULPS  X8, X9; \
	MOVAPS S1, X10; \
	SUBPS  X9, X10; \
	XORPS  X11, X11; \
	CMPPS  X10, X11, $1; \
	MOVUPS (QW+off)(B), X12; \
	MULPS  X8, X12; \
	MULPS  X8, X12; \
	MOVAPS S2, X13; \
	SUBPS  X12, X13; \
	MOVUPS (QX+off)(B), X14; \
	MULPS  X13, X14; \
	DIVPS  X10, X14; \
	MROUNDCLAMP(X14, X9, X12); \
	MOVAPS X14, X15; \
	CMPPS  X8, X15, $4; \
	ANDPS  X15, X11; \
	MOVUPS (QWX+off)(B), X9; \
	MULPS  X14, X9; \
	ADDPS  X9, X10; \
	MOVUPS (QW+off)(B), X12; \
	MULPS  X14, X12; \
	MULPS  X14, X12; \
	ADDPS  X12, X13; \
	XORPS  X9, X9; \
	CMPPS  X13, X9, $1; \
	ANDPS  X9, X11; \
	MOVAPS X10, X9; \
	MULPS  X10, X9; \
	MULPS  S2, X9; \
	MOVAPS S1, X12; \
	MULPS  S1, X12; \
	MULPS  X13, X12; \
	CMPPS  X9, X12, $1; \
	ANDPS  X12, X11; \
	ORPS   X11, X0; \
	XORPS  X8, X14; \
	ANDPS  X11, X14; \
	XORPS  X14, X8; \
	MOVUPS X8, (QL+off)(B); \
	XORPS  S1, X10; \
	ANDPS  X11, X10; \
	XORPS  X10, S1; \
	XORPS  S2, X13; \
	ANDPS  X11, X13; \
	XORPS  X13, S2

#define G2(off) \
	MGREEDY(off, DI, X1, X2); \
	MGREEDY(off, SI, X3, X4)

#define MFINAL(B, S1, S2) \
	MOVAPS S1, X9; \
	DIVPS  S2, X9; \
	XORPS  X10, X10; \
	CMPPS  S2, X10, $1; \
	ANDPS  X10, X9; \
	MOVUPS X9, QSCALE(B)

// func q3Search8SSE2(a, b *quads, start float32, rounds int, lo, hi int32)
// q3Search4SSE2 for the quads a and b at once; rounds continue until
// neither changes (extra rounds change nothing in a lane that has settled).
TEXT ·q3Search8SSE2(SB), NOSPLIT, $96-40
	MOVQ   a+0(FP), DI
	MOVQ   b+8(FP), SI
	MOVQ   rounds+24(FP), CX
	LEAQ   c-96(SP), R9
	ADDQ   $15, R9
	ANDQ   $~15, R9
	MOVL   $0x4B400000, AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8
	MOVO   X8, 0(R9)
	MOVL   $0x007FFFFF, AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8
	MOVO   X8, 16(R9)
	MOVL   $0x00400000, AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8
	MOVO   X8, 32(R9)
	MOVL   lo+32(FP), AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8
	MOVO   X8, 48(R9)
	MOVL   hi+36(FP), AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8
	MOVO   X8, 64(R9)
	MOVSS  start+16(FP), X7
	SHUFPS $0, X7, X7
	MLEVELS(DI, X1, X2)
	MLEVELS(SI, X3, X4)
	TESTQ  CX, CX
	JLE    final8

round8:
	XORPS  X0, X0
	G2(0); G2(16); G2(32); G2(48)
	G2(64); G2(80); G2(96); G2(112)
	G2(128); G2(144); G2(160); G2(176)
	G2(192); G2(208); G2(224); G2(240)
	MOVMSKPS X0, AX
	TESTL  AX, AX
	JZ     final8
	DECQ   CX
	JNZ    round8

final8:
	MFINAL(DI, X1, X2)
	MFINAL(SI, X3, X4)
	RET

// The q4_K and q5_K search, for the eight groups of 32 of a super-block
// (qkx2Oct): element i of group g is at 32·i + 4·g, so that one AVX2
// vector holds element i of the eight groups, and one SSE2 vector element
// i of groups 0-3 (half 0) or 4-7 (half 1, 16 bytes further on). The
// SSE2 kernels take a half; the per-group fields are 32 bytes apart.
#define KX 0
#define KW 1024
#define KXM 2048
#define KCUR 3072
#define KL 4096
#define KMN 5120
#define KMX 5152
#define KSUMW 5184
#define KSUMX 5216
#define KSCALE 5248
#define KBEST 5280
#define KMNSTART 5312
#define KISCALE 5344
#define KMNBEST 5376
#define KTOOK 5408

// Levels of elements off and off+32 at iscale X0 into cur, adding to the
// sums X1 += w·l, X2 += (w·l)·l and X11 += (w·l)·x, element off first.
// nearestInt's int32 results are packed to int16 with signed saturation,
// which keeps every value's clamp to [0, hi] (X6 = 0, X7 = hi in every
// 16-bit lane), then clamped and widened again (they are not negative).
#define KLEVEL2(off) \
	NEARESTI((KXM+off)(DI), X8); \
	NEARESTI((KXM+off+32)(DI), X9); \
	PACKCLAMP(X8, X9); \
	MOVO   X8, X12; \
	PUNPCKLWL X6, X8; \
	PUNPCKHWL X6, X12; \
	CVTPL2PS X8, X8; \
	CVTPL2PS X12, X12; \
	MOVUPS X8, (KCUR+off)(DI); \
	MOVUPS X12, (KCUR+off+32)(DI); \
	KSUMS(off, X8); \
	KSUMS(off+32, X12)

// Adds level R of element off to X1, X2 and X11; clobbers X9, X10.
#define KSUMS(off, R) \
	MOVUPS (KW+off)(DI), X9; \
	MULPS  R, X9; \
	ADDPS  X9, X1; \
	MOVAPS X9, X10; \
	MULPS  R, X10; \
	ADDPS  X10, X2; \
	MOVUPS (KX+off)(DI), X10; \
	MULPS  X9, X10; \
	ADDPS  X10, X11

// X12 += w·F(d) with d = (X9·cur + X10) - x in X8 for element off: F is
// KSQUARE (d·d), or KABS (|d|, with 0x7FFFFFFF in X15).
#define KERRF(off, F) \
	MOVUPS (KCUR+off)(DI), X8; \
	MULPS  X9, X8; \
	ADDPS  X10, X8; \
	MOVUPS (KX+off)(DI), X14; \
	SUBPS  X14, X8; \
	F; \
	MOVUPS (KW+off)(DI), X14; \
	MULPS  X14, X8; \
	ADDPS  X8, X12

#define KSQUARE MULPS X8, X8
#define KABS ANDPS X15, X8
#define KERR(off) KERRF(off, KSQUARE)
#define KERRMAD(off) KERRF(off, KABS)

// L(off) = cur(off) in the lanes of mask X13.
#define KTAKE(off) \
	SELECT((KL+off)(DI), (KCUR+off)(DI), X13, X8, X14)

// xm(off) = x(off) - X15.
#define KDIFF(off) \
	MOVUPS (KX+off)(DI), X8; \
	SUBPS  X15, X8; \
	MOVUPS X8, (KXM+off)(DI)

// The field at off = R in the lanes of mask X13, left in T; R clobbered.
#define KBLEND(off, R, T) \
	MOVUPS off(DI), T; \
	XORPS  T, R; \
	ANDPS  X13, R; \
	XORPS  R, T; \
	MOVUPS T, off(DI)

// The pairs of the first 16 elements, and of the last 16.
#define KPAIRSLO(M) \
	M(0); M(64); M(128); M(192); M(256); M(320); M(384); M(448)

#define KPAIRSHI(M) \
	M(512); M(576); M(640); M(704); M(768); M(832); M(896); M(960)

// M for the 32 elements.
#define KALL(M) \
	KALLLO(M); \
	KALLHI(M)

// The first 16 elements, and the last 16.
#define KALLLO(M) \
	M(0); M(32); M(64); M(96); M(128); M(160); M(192); M(224); \
	M(256); M(288); M(320); M(352); M(384); M(416); M(448); M(480)

#define KALLHI(M) \
	M(512); M(544); M(576); M(608); M(640); M(672); M(704); M(736); \
	M(768); M(800); M(832); M(864); M(896); M(928); M(960); M(992)

// M for elements 1..31.
#define KALL1(M) \
	M(32); M(64); M(96); M(128); M(160); M(192); M(224); M(256); \
	M(288); M(320); M(352); M(384); M(416); M(448); M(480); M(512); \
	M(544); M(576); M(608); M(640); M(672); M(704); M(736); M(768); \
	M(800); M(832); M(864); M(896); M(928); M(960); M(992)

// The constants of the level rounding: X3 = 1.5·2^23, X4 = 0x7FFFFF,
// X5 = 0x400000, X6 = 0, and hi (from AX) in every 16-bit lane of X7.
#define KCONSTS \
	NCONSTS(BX); \
	PXOR   X6, X6; \
	MOVL   AX, X7; \
	PSHUFLW $0, X7, X7; \
	PSHUFL $0, X7, X7

// Flags of the searches: groups of 16 elements (not 32), absolute error
// (not squared).
#define KSHORT 1
#define KMAD 2

// func qkx2Search4SSE2(s *qkx2Oct, half int, num *float32, n int, hi, flags int32)
// make_qkx2_quants's search for four groups of 32, or of 16 with KSHORT
// (half 0: groups 0-3, half 1: groups 4-7), from the state of its first
// guess: for each of the n candidates, iscale = num[is]/(mx - mn), levels
// clamped to [0, hi] (hi below 2^15), the least-squares scale and min (min
// at most 0), and the candidate is taken where D > 0 and its weighted
// error (squared, or absolute with KMAD) is below the best. n ≥ 1.
TEXT ·qkx2Search4SSE2(SB), NOSPLIT, $0-40
	MOVQ   s+0(FP), DI
	MOVQ   half+8(FP), AX
	SHLQ   $4, AX
	ADDQ   AX, DI
	MOVQ   num+16(FP), SI
	MOVQ   n+24(FP), CX
	MOVL   flags+36(FP), R11
	MOVL   hi+32(FP), AX
	KCONSTS

cand:
	MOVSS  (SI), X0
	SHUFPS $0, X0, X0
	MOVUPS KMX(DI), X8
	MOVUPS KMN(DI), X9
	SUBPS  X9, X8
	DIVPS  X8, X0
	XORPS  X1, X1
	XORPS  X2, X2
	XORPS  X11, X11
	KPAIRSLO(KLEVEL2)
	TESTL  $KSHORT, R11
	JNZ    klevels16
	KPAIRSHI(KLEVEL2)

klevels16:
	// D = sumW·sumL2 - sumL·sumL; X13 = 0 < D.
	MOVUPS KSUMW(DI), X8
	MULPS  X2, X8
	MOVAPS X1, X9
	MULPS  X1, X9
	SUBPS  X9, X8
	XORPS  X13, X13
	CMPPS  X8, X13, $1
	// X9 = scale = (sumW·sumXL - sumX·sumL)/D
	MOVUPS KSUMW(DI), X9
	MULPS  X11, X9
	MOVUPS KSUMX(DI), X10
	MULPS  X1, X10
	SUBPS  X10, X9
	DIVPS  X8, X9
	// X10 = min = (sumL2·sumX - sumL·sumXL)/D
	MOVUPS KSUMX(DI), X10
	MULPS  X2, X10
	MOVAPS X1, X14
	MULPS  X11, X14
	SUBPS  X14, X10
	DIVPS  X8, X10
	// Where min > 0: min = 0, scale = sumXL/sumL2.
	XORPS  X14, X14
	CMPPS  X10, X14, $1
	MOVAPS X14, X15
	ANDNPS X10, X15
	MOVAPS X15, X10
	MOVAPS X11, X8
	DIVPS  X2, X8
	XORPS  X9, X8
	ANDPS  X14, X8
	XORPS  X8, X9
	// X12 = the candidate's weighted squared error.
	XORPS  X12, X12
	TESTL  $KMAD, R11
	JNZ    kmad
	KALLLO(KERR)
	TESTL  $KSHORT, R11
	JNZ    kerrdone
	KALLHI(KERR)
	JMP    kerrdone

kmad:
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X15
	PSHUFL $0, X15, X15
	KALLLO(KERRMAD)
	TESTL  $KSHORT, R11
	JNZ    kerrdone
	KALLHI(KERRMAD)

kerrdone:
	// X13 = 0 < D && error < best.
	MOVUPS KBEST(DI), X8
	MOVAPS X12, X14
	CMPPS  X8, X14, $1
	ANDPS  X14, X13
	MOVMSKPS X13, AX
	TESTL  AX, AX
	JZ     knext
	KBLEND(KBEST, X12, X8)
	KBLEND(KSCALE, X9, X8)
	KBLEND(KMN, X10, X15)
	KALLLO(KTAKE)
	KALLLO(KDIFF)
	TESTL  $KSHORT, R11
	JNZ    knext
	KALLHI(KTAKE)
	KALLHI(KDIFF)

knext:
	ADDQ   $4, SI
	DECQ   CX
	JNZ    cand
	RET

// One column R of element off: store x, add x·x to X12.
#define KCOL(off, R) \
	MOVUPS R, (KX+off)(DI); \
	MOVAPS R, X8; \
	MULPS  R, X8; \
	ADDPS  X8, X12

// Elements 4k..4k+3 of the four groups of 32 at SI.
#define KLOADK(k) \
	MOVUPS (16*k)(SI), X0; \
	MOVUPS (128+16*k)(SI), X1; \
	MOVUPS (256+16*k)(SI), X2; \
	MOVUPS (384+16*k)(SI), X3; \
	TRANSPOSE(X0, X1, X2, X3, X4, X5); \
	KCOL(128*k, X1); \
	KCOL(128*k+32, X3); \
	KCOL(128*k+64, X4); \
	KCOL(128*k+96, X2)

// Element off (after the first): w = av + |x| with av in X13 and the
// mask 0x7FFFFFFF in X14; mn X10 = x < mn ? x : mn, mx X11 = x > mx ?
// x : mx, sumW X1 += w, sumX X2 += w·x.
#define KWEIGHT(off) \
	MOVUPS (KX+off)(DI), X0; \
	MOVAPS X0, X9; \
	ANDPS  X14, X9; \
	ADDPS  X13, X9; \
	MOVUPS X9, (KW+off)(DI); \
	MOVAPS X0, X8; \
	MINPS  X10, X8; \
	MOVAPS X8, X10; \
	MOVAPS X0, X8; \
	MAXPS  X11, X8; \
	MOVAPS X8, X11; \
	ADDPS  X9, X1; \
	MULPS  X0, X9; \
	ADDPS  X9, X2

// First guess for element off at iscale X0, scale X9, mn X10: xm = x - mn,
// L = levels, X12 += w·d·d with d = (scale·l + mn) - x.
#define KGUESS(off) \
	MOVUPS (KX+off)(DI), X1; \
	MOVAPS X1, X8; \
	SUBPS  X10, X8; \
	MOVUPS X8, (KXM+off)(DI); \
	MULPS  X0, X8; \
	ROUNDCLAMP(X8, X2, X11); \
	MOVUPS X8, (KL+off)(DI); \
	MULPS  X9, X8; \
	ADDPS  X10, X8; \
	SUBPS  X1, X8; \
	MULPS  X8, X8; \
	MOVUPS (KW+off)(DI), X2; \
	MULPS  X2, X8; \
	ADDPS  X8, X12

// func qkx2Start4SSE2(s *qkx2Oct, half int, x *float32, nmax int32)
// For the four groups of 32 at x, into half of s: x; the weights
// av + |x|, av = sqrt(Σx²/32); mn (at most 0, also into mnStart), mx, Σw
// and Σw·x in element order from element 0; xm = x - mn; and the first
// guess at iscale = nmax/(mx - mn): its levels, scale = 1/iscale and
// weighted squared error. A lane with mx == mn (flat) gets garbage beyond
// mn and mx.
TEXT ·qkx2Start4SSE2(SB), NOSPLIT, $0-28
	MOVQ   s+0(FP), DI
	MOVQ   half+8(FP), AX
	SHLQ   $4, AX
	ADDQ   AX, DI
	MOVQ   x+16(FP), SI
	XORPS  X12, X12
	KLOADK(0)
	KLOADK(1)
	KLOADK(2)
	KLOADK(3)
	KLOADK(4)
	KLOADK(5)
	KLOADK(6)
	KLOADK(7)
	// X13 = av = sqrt(Σx²/32), X14 = 0x7FFFFFFF.
	MOVL   $0x42000000, AX
	MOVL   AX, X8
	SHUFPS $0, X8, X8
	DIVPS  X8, X12
	SQRTPS X12, X13
	MOVL   $0x7FFFFFFF, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	// Element 0 starts mn, mx, Σw and Σw·x.
	MOVUPS KX(DI), X0
	MOVAPS X0, X9
	ANDPS  X14, X9
	ADDPS  X13, X9
	MOVUPS X9, KW(DI)
	MOVAPS X0, X10
	MOVAPS X0, X11
	MOVAPS X9, X1
	MOVAPS X9, X2
	MULPS  X0, X2
	KALL1(KWEIGHT)
	// mn = 0 < mn ? 0 : mn
	XORPS  X8, X8
	CMPPS  X10, X8, $1
	ANDNPS X10, X8
	MOVAPS X8, X10
	MOVUPS X10, KMN(DI)
	MOVUPS X10, KMNSTART(DI)
	MOVUPS X11, KMX(DI)
	MOVUPS X1, KSUMW(DI)
	MOVUPS X2, KSUMX(DI)
	// X0 = iscale = nmax/(mx - mn), X9 = scale = 1/iscale.
	MOVL   nmax+24(FP), AX
	CVTSL2SS AX, X0
	SHUFPS $0, X0, X0
	SUBPS  X10, X11
	DIVPS  X11, X0
	MOVL   $0x3F800000, BX
	MOVL   BX, X9
	SHUFPS $0, X9, X9
	DIVPS  X0, X9
	MOVUPS X9, KSCALE(DI)
	// ROUNDCLAMP's constants, lo = 0 and hi = nmax.
	NCONSTS(BX)
	PXOR   X6, X6
	MOVL   AX, X7
	PSHUFL $0, X7, X7
	XORPS  X12, X12
	KALL(KGUESS)
	MOVUPS X12, KBEST(DI)
	RET

// AVX2: the search for the eight groups at once, as qkx2Search4SSE2 does
// for four.

// NEARESTI on eight lanes at iscale S (Y3-Y5 as X3-X5), and at Y0.
#define YNEARESTIS(A, S, R) \
	VMULPS A, S, R; \
	VADDPS Y3, R, R; \
	VPAND  Y4, R, R; \
	VPSUBD Y5, R, R

#define YNEARESTI(A, R) YNEARESTIS(A, Y0, R)

// R = float32(clamp(R, lo, hi)) for int32 R, lo and hi in Y6's and Y7's
// dwords: what saturating to int16, clamping and widening again make.
#define YCLAMPF(R) \
	VPMAXSD   Y6, R, R; \
	VPMINSD   Y7, R, R; \
	VCVTDQ2PS R, R

// nearestInt's constants on eight lanes: Y3 = 1.5·2^23, Y4 = 0x7FFFFF,
// Y5 = 0x400000; clobbers DX.
#define YNCONSTS \
	MOVL   $0x4B400000, DX; \
	VMOVD   DX, X3; \
	VPBROADCASTD X3, Y3; \
	MOVL   $0x007FFFFF, DX; \
	VMOVD   DX, X4; \
	VPBROADCASTD X4, Y4; \
	MOVL   $0x00400000, DX; \
	VMOVD   DX, X5; \
	VPBROADCASTD X5, Y5

// Levels of elements off and off+32 at mn Y15; see KLEVEL2. They are
// clamped in 32-bit lanes (YCLAMPF), the same levels as KLEVEL2's.
#define YLEVEL2(off) \
	YXMNEAR(off, Y8); \
	YXMNEAR(off+32, Y12); \
	YCLAMPF(Y8); \
	YCLAMPF(Y12); \
	VMOVUPS Y8, (KCUR+off)(DI); \
	VMOVUPS Y12, (KCUR+off+32)(DI); \
	YSUMS(off, Y8); \
	YSUMS(off+32, Y12)

// YNEARESTI of element off of x less Y15, into R.
#define YXMNEAR(off, R) \
	VMOVUPS (KX+off)(DI), R; \
	VSUBPS  Y15, R, R; \
	YNEARESTI(R, R)

// A lane's levels at the candidate it took last: elements off and off+32 at
// iscale Y0 from x less Y15, as YLEVEL2 made them, into L in the lanes of
// Y13.
#define YRETAKE2(off) \
	YXMNEAR(off, Y8); \
	YXMNEAR(off+32, Y12); \
	YCLAMPF(Y8); \
	YCLAMPF(Y12); \
	VMOVUPS (KL+off)(DI), Y9; \
	VMOVUPS (KL+off+32)(DI), Y10; \
	VBLENDVPS Y13, Y8, Y9, Y8; \
	VBLENDVPS Y13, Y12, Y10, Y12; \
	VMOVUPS Y8, (KL+off)(DI); \
	VMOVUPS Y12, (KL+off+32)(DI)

#define YSUMS(off, R) \
	VMULPS (KW+off)(DI), R, Y9; \
	VADDPS Y9, Y1, Y1; \
	VMULPS R, Y9, Y10; \
	VADDPS Y10, Y2, Y2; \
	VMULPS (KX+off)(DI), Y9, Y10; \
	VADDPS Y10, Y11, Y11

#define YERRF(off, F) \
	VMULPS (KCUR+off)(DI), Y9, Y8; \
	VADDPS Y10, Y8, Y8; \
	VSUBPS (KX+off)(DI), Y8, Y8; \
	F; \
	VMULPS (KW+off)(DI), Y8, Y8; \
	VADDPS Y8, Y12, Y12

#define YSQUARE VMULPS Y8, Y8, Y8
#define YABS VANDPS Y15, Y8, Y8
#define YERR(off) YERRF(off, YSQUARE)
#define YERRMAD(off) YERRF(off, YABS)

#define YBLEND(off, R, T) \
	VMOVUPS off(DI), T; \
	VXORPS T, R, R; \
	VANDPS Y13, R, R; \
	VXORPS R, T, T; \
	VMOVUPS T, off(DI)

// func qkx2Search8AVX2(s *qkx2Oct, num *float32, n int, hi, flags int32)
// qkx2Search4SSE2 for the eight groups. n ≥ 1.
//
// As qkx2Search16AVX512, it makes x - mn as it goes, and a candidate a lane
// takes does not copy its levels: the lane keeps the candidate's iscale
// (KISCALE) and the mn its levels were made from (KMNBEST), KTOOK marks the
// lanes that took one, and the levels are made again from those once, at
// the end.
TEXT ·qkx2Search8AVX2(SB), NOSPLIT, $0-32
	MOVQ   s+0(FP), DI
	MOVQ   num+8(FP), SI
	MOVQ   n+16(FP), CX
	MOVL   flags+28(FP), R11
	MOVL   hi+24(FP), AX
	YNCONSTS
	VPXOR  Y6, Y6, Y6
	VMOVD   AX, X7
	VPBROADCASTD X7, Y7
	VMOVUPS Y6, KTOOK(DI)

ycand:
	VBROADCASTSS (SI), Y0
	VMOVUPS KMN(DI), Y15
	VMOVUPS KMX(DI), Y8
	VSUBPS Y15, Y8, Y8
	VDIVPS Y8, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y11, Y11, Y11
	KPAIRSLO(YLEVEL2)
	TESTL  $KSHORT, R11
	JNZ    ylevels16
	KPAIRSHI(YLEVEL2)

ylevels16:
	// D = sumW·sumL2 - sumL·sumL; Y13 = 0 < D.
	VMULPS KSUMW(DI), Y2, Y8
	VMULPS Y1, Y1, Y9
	VSUBPS Y9, Y8, Y8
	VXORPS Y13, Y13, Y13
	VCMPPS $1, Y8, Y13, Y13
	// Y9 = scale = (sumW·sumXL - sumX·sumL)/D
	VMULPS KSUMW(DI), Y11, Y9
	VMULPS KSUMX(DI), Y1, Y10
	VSUBPS Y10, Y9, Y9
	VDIVPS Y8, Y9, Y9
	// Y10 = min = (sumL2·sumX - sumL·sumXL)/D
	VMULPS KSUMX(DI), Y2, Y10
	VMULPS Y11, Y1, Y14
	VSUBPS Y14, Y10, Y10
	VDIVPS Y8, Y10, Y10
	// Where min > 0: min = 0, scale = sumXL/sumL2.
	VXORPS Y14, Y14, Y14
	VCMPPS $1, Y10, Y14, Y14
	VANDNPS Y10, Y14, Y10
	VDIVPS Y2, Y11, Y8
	VXORPS Y9, Y8, Y8
	VANDPS Y14, Y8, Y8
	VXORPS Y8, Y9, Y9
	// Y12 = the candidate's weighted squared error.
	VXORPS Y12, Y12, Y12
	TESTL  $KMAD, R11
	JNZ    ymad
	KALLLO(YERR)
	TESTL  $KSHORT, R11
	JNZ    yerrdone
	KALLHI(YERR)
	JMP    yerrdone

ymad:
	MOVL   $0x7FFFFFFF, DX
	VMOVD   DX, X15
	VPBROADCASTD X15, Y15
	KALLLO(YERRMAD)
	TESTL  $KSHORT, R11
	JNZ    yerrdone
	KALLHI(YERRMAD)

yerrdone:
	// Y13 = 0 < D && error < best.
	VCMPPS $1, KBEST(DI), Y12, Y14
	VANDPS Y14, Y13, Y13
	VMOVMSKPS Y13, AX
	TESTL  AX, AX
	JZ     ynext
	VMOVUPS KTOOK(DI), Y14
	VORPS  Y13, Y14, Y14
	VMOVUPS Y14, KTOOK(DI)
	YBLEND(KISCALE, Y0, Y8)
	VMOVUPS KMN(DI), Y14
	YBLEND(KMNBEST, Y14, Y8)
	YBLEND(KBEST, Y12, Y8)
	YBLEND(KSCALE, Y9, Y8)
	YBLEND(KMN, Y10, Y15)

ynext:
	ADDQ   $4, SI
	DECQ   CX
	JNZ    ycand
	// The levels of the lanes that took a candidate, from its iscale and
	// the mn before it.
	VMOVUPS KTOOK(DI), Y13
	VMOVMSKPS Y13, AX
	TESTL  AX, AX
	JZ     ydone
	VMOVUPS KISCALE(DI), Y0
	VMOVUPS KMNBEST(DI), Y15
	KPAIRSLO(YRETAKE2)
	TESTL  $KSHORT, R11
	JNZ    ydone
	KPAIRSHI(YRETAKE2)

ydone:
	VZEROUPPER
	RET

// AVX2: make_qx_quants's search for the eight groups of two quads at once.
// The kernel interleaves them into a qxOct (element i of group g at
// 32·i + 4·g, groups 4-7 from the second quad), searches there, and writes
// the levels and scales back.
#define OX 0
#define OW 512
#define OWX 1024
#define OL 1536
#define QXOCT 2176
#define OMX 2048
#define OBEST 2080
#define OSCALE 2112
#define OISCALE 2144

// M for the sixteen elements of the oct.
#define OALL(M) \
	M(0); M(32); M(64); M(96); M(128); M(160); M(192); M(224); \
	M(256); M(288); M(320); M(352); M(384); M(416); M(448); M(480)

// Element i (byte offset off in a quad, 2·off in the oct) of field F of
// both quads into the oct's field G.
#define OINTERLEAVE(F, G, off) \
	VMOVUPS (F+off)(AX), X8; \
	VINSERTF128 $1, (F+off)(BX), Y8, Y8; \
	VMOVUPS Y8, (G+2*off)(DI)

#define OIN(off) \
	OINTERLEAVE(QX, OX, off); \
	OINTERLEAVE(QW, OW, off); \
	OINTERLEAVE(QWX, OWX, off)

// The sixteen elements of both quads into the oct, and Y13 = mx of the
// eight groups.
#define OINALL \
	OIN(0); OIN(16); OIN(32); OIN(48); OIN(64); OIN(80); OIN(96); OIN(112); \
	OIN(128); OIN(144); OIN(160); OIN(176); OIN(192); OIN(208); OIN(224); OIN(240); \
	VMOVUPS QMX(AX), X13; \
	VINSERTF128 $1, QMX(BX), Y13, Y13

// OCTROW(OFF, R): the levels at OFF(DI) truncated to int32, plus Y15, into
// R.
#define OCTROW(OFF, R) \
	VCVTTPS2DQ OFF(DI), R; \
	VPADDD     Y15, R, R

// OCTGROUP(YR, XR, OFF, LP): the eight int32 in YR (XR its low half) as
// bytes at OFF(LP). Clobbers Y0.
#define OCTGROUP(YR, XR, OFF, LP) \
	VEXTRACTI128 $1, YR, X0; \
	VPACKSSDW    X0, XR, X0; \
	VPACKSSWB    X0, X0, X0; \
	VMOVQ         X0, OFF(LP)

// OCTHALF(h, LP, NMAX) writes oct elements 8h..8h+7 of the eight groups as
// int8 plus Y15's int32s: the rows truncated and offset (OCTROW),
// transposed (T8), each group's eight narrowed to bytes at LP+16g+8h
// (OCTGROUP). Clobbers Y0-Y15; reloads Y15 from NMAX (a register).
#define OCTHALF(h, LP, NMAX) \
	OCTROW(OL+256*(h)+0, Y0); \
	OCTROW(OL+256*(h)+32, Y1); \
	OCTROW(OL+256*(h)+64, Y2); \
	OCTROW(OL+256*(h)+96, Y3); \
	OCTROW(OL+256*(h)+128, Y4); \
	OCTROW(OL+256*(h)+160, Y5); \
	OCTROW(OL+256*(h)+192, Y6); \
	OCTROW(OL+256*(h)+224, Y7); \
	T8(); \
	OCTGROUP(Y8, X8, 0+8*(h), LP); \
	OCTGROUP(Y9, X9, 16+8*(h), LP); \
	OCTGROUP(Y10, X10, 32+8*(h), LP); \
	OCTGROUP(Y11, X11, 48+8*(h), LP); \
	OCTGROUP(Y12, X12, 64+8*(h), LP); \
	OCTGROUP(Y13, X13, 80+8*(h), LP); \
	OCTGROUP(Y14, X14, 96+8*(h), LP); \
	OCTGROUP(Y15, X15, 112+8*(h), LP); \
	VMOVD         NMAX, X15; \
	VPBROADCASTD X15, Y15

// OCTOUT(LP, NMAX) writes the levels of the oct (OL, element i of group g
// at 8i+g) as int8 plus NMAX (a 32-bit register) to LP, group g's sixteen
// at LP+16g: per half of the elements, the rows truncated to int32 and
// offset, an 8×8 transpose (T8), and each group's eight narrowed to bytes.
// Clobbers Y0-Y15.
#define OCTOUT(LP, NMAX) \
	VMOVD         NMAX, X15; \
	VPBROADCASTD X15, Y15; \
	OCTHALF(0, LP, NMAX); \
	OCTHALF(1, LP, NMAX)

// The levels of oct elements off and off+32 at iscale Y0 added to the sums
// Y1 += wx·l and Y2 += (w·l)·l, element off first; see LEVEL2.
#define OSUMS2(off) \
	YNEARESTI((OX+off)(DI), Y8); \
	YNEARESTI((OX+off+32)(DI), Y14); \
	YCLAMPF(Y8); \
	YCLAMPF(Y14); \
	OSUMS(off, Y8); \
	OSUMS(off+32, Y14)

#define OSUMS(off, R) \
	VMULPS (OWX+off)(DI), R, Y9; \
	VADDPS Y9, Y1, Y1; \
	VMULPS (OW+off)(DI), R, Y10; \
	VMULPS R, Y10, Y10; \
	VADDPS Y10, Y2, Y2

#define OSUMSALL \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	OSUMS2(0); OSUMS2(64); OSUMS2(128); OSUMS2(192); OSUMS2(256); OSUMS2(320); OSUMS2(384); OSUMS2(448)

// The levels of element off at iscale Y0 into L.
#define OLEVEL(off) \
	YNEARESTI((OX+off)(DI), Y8); \
	YCLAMPF(Y8); \
	VMOVUPS Y8, (OL+off)(DI)

// Element off's levels at two candidates' iscales, Y0 and Y11, added to
// their sums: Y1 += wx·l and Y2 += (w·l)·l for the first, Y12 and Y13 for
// the second; OSUMS's operations for each.
#define OSUMSDUO(off) \
	YNEARESTIS((OX+off)(DI), Y0, Y8); \
	YNEARESTIS((OX+off)(DI), Y11, Y14); \
	YCLAMPF(Y8); \
	YCLAMPF(Y14); \
	VMULPS (OWX+off)(DI), Y8, Y9; \
	VADDPS Y9, Y1, Y1; \
	VMULPS (OW+off)(DI), Y8, Y10; \
	VMULPS Y8, Y10, Y10; \
	VADDPS Y10, Y2, Y2; \
	VMULPS (OWX+off)(DI), Y14, Y9; \
	VADDPS Y9, Y12, Y12; \
	VMULPS (OW+off)(DI), Y14, Y10; \
	VMULPS Y14, Y10, Y10; \
	VADDPS Y10, Y13, Y13

// OTRY(S, LX, L2, skip): the candidate of iscale S, with sumlx LX and suml2
// L2, taken in the lanes where 0 < suml2 && best·suml2 < sumlx·sumlx:
// scale = sumlx/suml2, best = scale·sumlx, and its iscale kept (OBEST,
// OSCALE and OISCALE in the oct). Clobbers Y8-Y10, Y14 and Y15.
#define OTRY(S, LX, L2, skip) \
	VMULPS    LX, LX, Y8; \
	VMOVUPS   OBEST(DI), Y15; \
	VMULPS    L2, Y15, Y9; \
	VCMPPS    $1, Y8, Y9, Y9; \
	VXORPS    Y10, Y10, Y10; \
	VCMPPS    $1, L2, Y10, Y10; \
	VANDPS    Y10, Y9, Y9; \
	VMOVMSKPS Y9, DX; \
	TESTL     DX, DX; \
	JZ        skip; \
	VDIVPS    L2, LX, Y14; \
	VMULPS    LX, Y14, Y8; \
	VBLENDVPS Y9, Y8, Y15, Y15; \
	VMOVUPS   Y15, OBEST(DI); \
	VMOVUPS   OSCALE(DI), Y10; \
	VBLENDVPS Y9, Y14, Y10, Y10; \
	VMOVUPS   Y10, OSCALE(DI); \
	VMOVUPS   OISCALE(DI), Y10; \
	VBLENDVPS Y9, S, Y10, Y10; \
	VMOVUPS   Y10, OISCALE(DI); \
skip:

// func qxSearch8AVX2(a, b *quads, o *qxOct, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32)
// qxSearch4SSE2 for the groups of a (lanes 0-3) and b (lanes 4-7) at once,
// with o as the interleaved working copy.
//
// As qxSearch16AVX512, it keeps only each candidate's sums and the iscale
// of each lane's best so far, and makes the levels from it at the end. A
// candidate's sums do not depend on which candidates were taken before it,
// so it sums two candidates at once, in one pass over the elements (two
// chains of additions instead of one: the additions' latency bounds a
// pass), and tries them in order.
TEXT ·qxSearch8AVX2(SB), NOSPLIT, $0-68
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   o+16(FP), DI
	MOVQ   num+40(FP), SI
	MOVQ   n+48(FP), CX
	// The oct from the quads, Y13 = mx of the eight groups.
	OINALL
	VMOVUPS Y13, OMX(DI)
	MOVL   lo+56(FP), R8
	MOVL   hi+60(FP), R9
	YNCONSTS
	VMOVD   R8, X6
	VPBROADCASTD X6, Y6
	VMOVD   R9, X7
	VPBROADCASTD X7, Y7
	// Start: iscale = num[0]/mx.
	VBROADCASTSS (SI), Y0
	VDIVPS Y13, Y0, Y0
	VMOVUPS Y0, OISCALE(DI)
	OSUMSALL
	// scale = suml2 != 0 ? sumlx/suml2 : 0; best = scale·sumlx.
	VDIVPS Y2, Y1, Y11
	VXORPS Y10, Y10, Y10
	VCMPPS $4, Y10, Y2, Y9
	VANDPS Y9, Y11, Y11
	VMULPS Y1, Y11, Y12
	VMOVUPS Y11, OSCALE(DI)
	VMOVUPS Y12, OBEST(DI)
	DECQ   CX
	JLE    odone

ocand:
	CMPQ   CX, $2
	JLT    osingle
	VBROADCASTSS 4(SI), Y0
	VDIVPS OMX(DI), Y0, Y0
	VBROADCASTSS 8(SI), Y11
	VDIVPS OMX(DI), Y11, Y11
	ADDQ   $8, SI
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	OALL(OSUMSDUO)
	OTRY(Y0, Y1, Y2, ofirst)
	OTRY(Y11, Y12, Y13, osecond)
	SUBQ   $2, CX
	JNZ    ocand
	JMP    odone

osingle:
	ADDQ   $4, SI
	VBROADCASTSS (SI), Y0
	VDIVPS OMX(DI), Y0, Y0
	OSUMSALL
	OTRY(Y0, Y1, Y2, oonly)

odone:
	VMOVUPS OISCALE(DI), Y0
	OALL(OLEVEL)
	MOVQ    scales+32(FP), R8
	VMOVUPS OSCALE(DI), Y11
	VMOVUPS Y11, (R8)
	MOVQ    L+24(FP), R8
	MOVL    nmax+64(FP), R9
	OCTOUT(R8, R9)
	VZEROUPPER
	RET

// AVX-512: the search for the sixteen groups of two octs at once, in a
// qkx2Hex (element i of group g at 16·i + g, groups 8-15 the second oct's):
// qkx2Search8AVX2 sixteen lanes wide, every lane's operations in the same
// order, the masks in K registers.
#define HX 0
#define HW 4096
#define HCUR 2048
#define HL 6144

// M for the pairs of elements (0, 1) … (14, 15), and (16, 17) … (30, 31).
#define HPAIRSLO(M) \
	M(0); M(128); M(256); M(384); M(512); M(640); M(768); M(896)

#define HPAIRSHI(M) \
	M(1024); M(1152); M(1280); M(1408); M(1536); M(1664); M(1792); M(1920)

// M for the first 16 elements, and the last 16.
#define HALLLO(M) \
	M(0); M(64); M(128); M(192); M(256); M(320); M(384); M(448); \
	M(512); M(576); M(640); M(704); M(768); M(832); M(896); M(960)

#define HALLHI(M) \
	M(1024); M(1088); M(1152); M(1216); M(1280); M(1344); M(1408); M(1472); \
	M(1536); M(1600); M(1664); M(1728); M(1792); M(1856); M(1920); M(1984)

// YNEARESTI on sixteen lanes (Z0, Z3-Z5).
#define ZNEARESTI(A, R) \
	VMULPS A, Z0, R; \
	VADDPS Z3, R, R; \
	VPANDD Z4, R, R; \
	VPSUBD Z5, R, R

// nearestInt's constants on sixteen lanes: Z3 = 1.5·2^23, Z4 = 0x7FFFFF,
// Z5 = 0x400000; clobbers DX.
#define ZNCONSTS \
	MOVL $0x4B400000, DX; \
	VPBROADCASTD DX, Z3; \
	MOVL $0x007FFFFF, DX; \
	VPBROADCASTD DX, Z4; \
	MOVL $0x00400000, DX; \
	VPBROADCASTD DX, Z5

// ZNCONSTS, and the clamp's bounds LO and HI (32-bit arguments) in Z6 and
// Z7; clobbers DX.
#define ZNBOUNDS(LO, HI) \
	ZNCONSTS; \
	MOVL LO, DX; \
	VPBROADCASTD DX, Z6; \
	MOVL HI, DX; \
	VPBROADCASTD DX, Z7

// ZNEARESTI of element off of x less MN (a register), into R.
#define ZXMNEAR(off, MN, R) \
	VMOVUPS (HX+off)(DI), R; \
	VSUBPS  MN, R, R; \
	ZNEARESTI(R, R)

// YLEVEL2 for elements off and off+64 of the hex at mn Z16: levels clamped
// in 32-bit lanes (ZCLAMPF), so each element stays in its group's lane.
#define ZLEVEL2(off) \
	ZXMNEAR(off, Z16, Z8); \
	ZXMNEAR(off+64, Z16, Z12); \
	ZCLAMPF(Z8); \
	ZCLAMPF(Z12); \
	VMOVUPS Z8, (HCUR+off)(DI); \
	VMOVUPS Z12, (HCUR+off+64)(DI); \
	ZSUMS(off, Z8); \
	ZSUMS(off+64, Z12)

// R = float(min(max(R, lo), hi)) for int32 R, lo and hi in Z6's and Z7's
// dwords: what the SSE2 kernels make by saturating to int16, clamping and
// widening again.
#define ZCLAMPF(R) \
	VPMAXSD Z6, R, R; \
	VPMINSD Z7, R, R; \
	VCVTDQ2PS R, R

#define ZSUMS(off, R) \
	VMULPS (HW+off)(DI), R, Z9; \
	VADDPS Z9, Z1, Z1; \
	VMULPS R, Z9, Z10; \
	VADDPS Z10, Z2, Z2; \
	VMULPS (HX+off)(DI), Z9, Z10; \
	VADDPS Z10, Z11, Z11

#define ZERRF(off, F) \
	VMULPS (HCUR+off)(DI), Z9, Z8; \
	VADDPS Z10, Z8, Z8; \
	VSUBPS (HX+off)(DI), Z8, Z8; \
	F; \
	VMULPS (HW+off)(DI), Z8, Z8; \
	VADDPS Z8, Z12, Z12

#define ZSQUARE VMULPS Z8, Z8, Z8
#define ZABS VPANDD Z15, Z8, Z8
#define ZERR(off) ZERRF(off, ZSQUARE)
#define ZERRMAD(off) ZERRF(off, ZABS)

// Row off of oct field F of a (R8) and b (R9), side by side, into hex field
// G; and back.
#define HIN(F, G, off) \
	VMOVUPS (F+off)(R8), Y8; \
	VINSERTF64X4 $1, (F+off)(R9), Z8, Z8; \
	VMOVUPS Z8, (G+2*off)(DI)

#define HOUT(F, G, off) \
	VMOVUPS (G+2*off)(DI), Z8; \
	VMOVUPS Y8, (F+off)(R8); \
	VEXTRACTF64X4 $1, Z8, (F+off)(R9)

#define HINROW(off) \
	HIN(KX, HX, off); \
	HIN(KW, HW, off); \
	HIN(KL, HL, off)

// Per-group field F of a and b, side by side, into the register whose
// halves are Y and Z; and back.
#define HINREG(F, Y, Z) \
	VMOVUPS F(R8), Y; \
	VINSERTF64X4 $1, F(R9), Z, Z

#define HOUTREG(F, Y, Z) \
	VMOVUPS Y, F(R8); \
	VEXTRACTF64X4 $1, Z, F(R9)

#define HOUTROW(off) HOUT(KL, HL, off)

// A lane's levels at the candidate it took last: off and off+64 at iscale
// Z0 from x less Z23, as ZLEVEL2 made them, into L in the lanes of K3.
#define ZRETAKE2(off) \
	ZXMNEAR(off, Z23, Z8); \
	ZXMNEAR(off+64, Z23, Z9); \
	ZCLAMPF(Z8); \
	ZCLAMPF(Z9); \
	VMOVUPS Z8, K3, (HL+off)(DI); \
	VMOVUPS Z9, K3, (HL+off+64)(DI)

// func qkx2Search16AVX512(a, b *qkx2Oct, s *qkx2Hex, num *float32, n int, hi, flags int32)
// qkx2Search8AVX2 for the eight groups of a and the eight of b at once:
// it interleaves them into s, searches there, and writes back to a and b
// the levels, mins and scales. n ≥ 1.
//
// A lane's state stays in registers: Z16 mn, Z17 mx, Z18 sumW, Z19 sumX,
// Z20 scale, Z21 best. A candidate a lane takes does not copy its levels:
// the lane keeps the candidate's iscale (Z22) and the mn its levels were
// made from (Z23), K3 marks the lanes that took one, and the levels are
// made again from those once, at the end, by the same operations.
TEXT ·qkx2Search16AVX512(SB), NOSPLIT, $0-48
	MOVQ   a+0(FP), R8
	MOVQ   b+8(FP), R9
	MOVQ   s+16(FP), DI
	MOVQ   num+24(FP), SI
	MOVQ   n+32(FP), CX
	MOVL   flags+44(FP), R11
	MOVL   hi+40(FP), AX
	KALLLO(HINROW)
	KALLHI(HINROW)
	HINREG(KMN, Y16, Z16)
	HINREG(KMX, Y17, Z17)
	HINREG(KSUMW, Y18, Z18)
	HINREG(KSUMX, Y19, Z19)
	HINREG(KSCALE, Y20, Z20)
	HINREG(KBEST, Y21, Z21)
	VMOVAPS Z16, Z23
	KXORW  K3, K3, K3
	ZNCONSTS
	VPXORD Z6, Z6, Z6
	VPBROADCASTD AX, Z7
	VPXORD Z13, Z13, Z13

zcand:
	VBROADCASTSS (SI), Z0
	VSUBPS  Z16, Z17, Z8
	VDIVPS  Z8, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z11, Z11, Z11
	HPAIRSLO(ZLEVEL2)
	TESTL  $KSHORT, R11
	JNZ    zlevels16
	HPAIRSHI(ZLEVEL2)

zlevels16:
	// D = sumW·sumL2 - sumL·sumL; K1 = 0 < D.
	VMULPS Z18, Z2, Z8
	VMULPS Z1, Z1, Z9
	VSUBPS Z9, Z8, Z8
	VCMPPS $1, Z8, Z13, K1
	// Z9 = scale = (sumW·sumXL - sumX·sumL)/D
	VMULPS Z18, Z11, Z9
	VMULPS Z19, Z1, Z10
	VSUBPS Z10, Z9, Z9
	VDIVPS Z8, Z9, Z9
	// Z10 = min = (sumL2·sumX - sumL·sumXL)/D
	VMULPS Z19, Z2, Z10
	VMULPS Z11, Z1, Z14
	VSUBPS Z14, Z10, Z10
	VDIVPS Z8, Z10, Z10
	// Where min > 0 (K2): min = 0, scale = sumXL/sumL2.
	VPXORD  Z14, Z14, Z14
	VCMPPS  $1, Z10, Z14, K2
	VMOVUPS Z14, K2, Z10
	VDIVPS  Z2, Z11, K2, Z9
	// Z12 = the candidate's weighted squared error.
	VPXORD Z12, Z12, Z12
	TESTL  $KMAD, R11
	JNZ    zmad
	HALLLO(ZERR)
	TESTL  $KSHORT, R11
	JNZ    zerrdone
	HALLHI(ZERR)
	JMP    zerrdone

zmad:
	MOVL   $0x7FFFFFFF, DX
	VPBROADCASTD DX, Z15
	HALLLO(ZERRMAD)
	TESTL  $KSHORT, R11
	JNZ    zerrdone
	HALLHI(ZERRMAD)

zerrdone:
	// K1 = 0 < D && error < best.
	VCMPPS   $1, Z21, Z12, K1, K1
	KORTESTW K1, K1
	JZ       znext
	KORW     K1, K3, K3
	VMOVAPS  Z12, K1, Z21
	VMOVAPS  Z9, K1, Z20
	VMOVAPS  Z0, K1, Z22
	VMOVAPS  Z16, K1, Z23
	VMOVAPS  Z10, K1, Z16

znext:
	ADDQ   $4, SI
	DECQ   CX
	JNZ    zcand
	// The levels of the lanes that took a candidate, from its iscale and
	// the mn before it.
	KORTESTW K3, K3
	JZ       zout
	VMOVAPS  Z22, Z0
	HPAIRSLO(ZRETAKE2)
	TESTL  $KSHORT, R11
	JNZ    zout
	HPAIRSHI(ZRETAKE2)

zout:
	KALLLO(HOUTROW)
	KALLHI(HOUTROW)
	HOUTREG(KMN, Y16, Z16)
	HOUTREG(KSCALE, Y20, Z20)
	VZEROUPPER
	RET

// AVX-512: make_qx_quants's search for the sixteen groups of four quads at
// once, qxSearch8AVX2 sixteen lanes wide: the kernel interleaves them into
// a qxHex (element i of group g at 16·i + g, groups 4k to 4k+3 from the
// k-th quad), searches there, and writes the levels and scales back.
#define PX 0
#define PW 1024
#define PWX 2048
#define PL 3072

// Element i (byte offset off in a quad, 4·off in the hex) of field F of the
// four quads (AX, BX, R10, R12) into the hex's field G.
#define PINTERLEAVE(F, G, off) \
	VMOVUPS (F+off)(AX), X8; \
	VINSERTF32X4 $1, (F+off)(BX), Z8, Z8; \
	VINSERTF32X4 $2, (F+off)(R10), Z8, Z8; \
	VINSERTF32X4 $3, (F+off)(R12), Z8, Z8; \
	VMOVUPS Z8, (G+4*off)(DI)

#define PIN(off) \
	PINTERLEAVE(QX, PX, off); \
	PINTERLEAVE(QW, PW, off); \
	PINTERLEAVE(QWX, PWX, off)

// The sixteen elements of the four quads into the hex, and Z13 = mx of the
// sixteen groups.
#define PINALL \
	PIN(0); PIN(16); PIN(32); PIN(48); PIN(64); PIN(80); PIN(96); PIN(112); \
	PIN(128); PIN(144); PIN(160); PIN(176); PIN(192); PIN(208); PIN(224); PIN(240); \
	VMOVUPS QMX(AX), X13; \
	VINSERTF32X4 $1, QMX(BX), Z13, Z13; \
	VINSERTF32X4 $2, QMX(R10), Z13, Z13; \
	VINSERTF32X4 $3, QMX(R12), Z13, Z13

// M for the sixteen elements of the hex.
#define PALL(M) \
	M(0); M(64); M(128); M(192); M(256); M(320); M(384); M(448); \
	M(512); M(576); M(640); M(704); M(768); M(832); M(896); M(960)

// HEXGROUP(IMM, A, B, LP, G): group G's sixteen levels, the 128-bit lanes
// IMM selects from A and B, truncated to int32, plus Z24, as bytes at
// LP+16G.
#define HEXGROUP(IMM, A, B, LP, G) \
	VSHUFF32X4 $IMM, A, B, Z20; \
	VCVTTPS2DQ Z20, Z20; \
	VPADDD     Z24, Z20, Z20; \
	VPMOVDB    Z20, (16*(G))(LP)

// HEXCOL(S0, S4, S8, S12, LP, C): groups C, C+4, C+8 and C+12 from the
// registers whose 128-bit lane m holds group 4m+C of elements 0-3, 4-7,
// 8-11 and 12-15.
#define HEXCOL(S0, S4, S8, S12, LP, C) \
	VSHUFF32X4 $0x44, S4, S0, Z16; \
	VSHUFF32X4 $0xEE, S4, S0, Z17; \
	VSHUFF32X4 $0x44, S12, S8, Z18; \
	VSHUFF32X4 $0xEE, S12, S8, Z19; \
	HEXGROUP(0x88, Z18, Z16, LP, C); \
	HEXGROUP(0xDD, Z18, Z16, LP, C+4); \
	HEXGROUP(0x88, Z19, Z17, LP, C+8); \
	HEXGROUP(0xDD, Z19, Z17, LP, C+12)

// HEXOUT(LP, NMAX) writes the levels of the hex (PL, element i of group g
// at 16i+g) as int8 plus NMAX (a 32-bit register) to LP, group g's sixteen
// at LP+16g: the 16×16 transpose of the sixteen rows in Z0-Z15 (unpack
// pairs, then quads, then 128-bit lanes), each group truncated to int32,
// offset and narrowed to bytes. Clobbers Z0-Z24.
#define HEXOUT(LP, NMAX) \
	VMOVUPS    (PL+0)(DI), Z0; \
	VMOVUPS    (PL+64)(DI), Z1; \
	VMOVUPS    (PL+128)(DI), Z2; \
	VMOVUPS    (PL+192)(DI), Z3; \
	VMOVUPS    (PL+256)(DI), Z4; \
	VMOVUPS    (PL+320)(DI), Z5; \
	VMOVUPS    (PL+384)(DI), Z6; \
	VMOVUPS    (PL+448)(DI), Z7; \
	VMOVUPS    (PL+512)(DI), Z8; \
	VMOVUPS    (PL+576)(DI), Z9; \
	VMOVUPS    (PL+640)(DI), Z10; \
	VMOVUPS    (PL+704)(DI), Z11; \
	VMOVUPS    (PL+768)(DI), Z12; \
	VMOVUPS    (PL+832)(DI), Z13; \
	VMOVUPS    (PL+896)(DI), Z14; \
	VMOVUPS    (PL+960)(DI), Z15; \
	TPAIRS(Z0, Z1, Z2, Z3, Z16, Z17, Z18, Z19); \
	TPAIRS(Z4, Z5, Z6, Z7, Z20, Z21, Z22, Z23); \
	TPAIRS(Z8, Z9, Z10, Z11, Z24, Z25, Z26, Z27); \
	TPAIRS(Z12, Z13, Z14, Z15, Z28, Z29, Z30, Z31); \
	TQUADS(Z16, Z17, Z18, Z19, Z0, Z1, Z2, Z3); \
	TQUADS(Z20, Z21, Z22, Z23, Z4, Z5, Z6, Z7); \
	TQUADS(Z24, Z25, Z26, Z27, Z8, Z9, Z10, Z11); \
	TQUADS(Z28, Z29, Z30, Z31, Z12, Z13, Z14, Z15); \
	VPBROADCASTD NMAX, Z24; \
	HEXCOL(Z0, Z4, Z8, Z12, LP, 0); \
	HEXCOL(Z1, Z5, Z9, Z13, LP, 1); \
	HEXCOL(Z2, Z6, Z10, Z14, LP, 2); \
	HEXCOL(Z3, Z7, Z11, Z15, LP, 3);

// OSUMS2 on sixteen lanes: the levels of hex elements off and off+64 at
// iscale Z0 added to the sums Z1 += wx·l and Z2 += (w·l)·l, element off
// first.
#define PSUMS2(off) \
	ZNEARESTI((PX+off)(DI), Z8); \
	ZNEARESTI((PX+off+64)(DI), Z14); \
	ZCLAMPF(Z8); \
	ZCLAMPF(Z14); \
	PSUMS(off, Z8); \
	PSUMS(off+64, Z14)

#define PSUMS(off, R) \
	VMULPS (PWX+off)(DI), R, Z9; \
	VADDPS Z9, Z1, Z1; \
	VMULPS (PW+off)(DI), R, Z10; \
	VMULPS R, Z10, Z10; \
	VADDPS Z10, Z2, Z2

#define PSUMSALL \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	PSUMS2(0); PSUMS2(128); PSUMS2(256); PSUMS2(384); PSUMS2(512); PSUMS2(640); PSUMS2(768); PSUMS2(896)

// The levels of element off at iscale Z0 into L.
#define PLEVEL(off) \
	ZNEARESTI((PX+off)(DI), Z8); \
	ZCLAMPF(Z8); \
	VMOVUPS Z8, (PL+off)(DI)

// func qxSearch16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32)
// qxSearch8AVX2 for the groups of a, b, c and d (lanes 0-3, 4-7, 8-11,
// 12-15) at once, with o as the interleaved working copy; the levels plus
// nmax go to L[:256], group by group, and the scales to scales[:16].
//
// A candidate's levels depend on its iscale alone, so the search keeps only
// the sums: Z22 holds the iscale of each lane's best candidate so far, from
// which the levels are made once, at the end, by the same operations.
TEXT ·qxSearch16AVX512(SB), NOSPLIT, $0-84
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   c+16(FP), R10
	MOVQ   d+24(FP), R12
	MOVQ   o+32(FP), DI
	MOVQ   num+56(FP), SI
	MOVQ   n+64(FP), CX
	// The hex from the quads, Z13 = mx of the sixteen groups.
	PINALL
	ZNBOUNDS(lo+72(FP), hi+76(FP))
	// Start: iscale = num[0]/mx.
	VBROADCASTSS (SI), Z0
	VDIVPS Z13, Z0, Z0
	VMOVAPS Z0, Z22
	PSUMSALL
	// scale = suml2 != 0 ? sumlx/suml2 : 0; best = scale·sumlx.
	VDIVPS Z2, Z1, Z11
	VPXORD Z10, Z10, Z10
	VCMPPS $4, Z10, Z2, K1
	VMOVAPS.Z Z11, K1, Z11
	VMULPS Z1, Z11, Z12
	DECQ   CX
	JLE    pdone

pcand:
	ADDQ   $4, SI
	VBROADCASTSS (SI), Z0
	VDIVPS Z13, Z0, Z0
	PSUMSALL
	// K1 = 0 < suml2 && best·suml2 < sumlx·sumlx
	VMULPS Z1, Z1, Z8
	VMULPS Z2, Z12, Z9
	VCMPPS $1, Z8, Z9, K1
	VPXORD Z10, Z10, Z10
	VCMPPS $1, Z2, Z10, K1, K1
	KORTESTW K1, K1
	JZ     pnext
	// Accept: scale = sumlx/suml2, best = scale·sumlx, iscale.
	VDIVPS Z2, Z1, Z14
	VMULPS Z1, Z14, Z15
	VMOVAPS Z14, K1, Z11
	VMOVAPS Z15, K1, Z12
	VMOVAPS Z0, K1, Z22

pnext:
	DECQ   CX
	JNZ    pcand

pdone:
	VMOVAPS Z22, Z0
	PALL(PLEVEL)
	HEXDONE(Z11)
	VZEROUPPER
	RET

// func divRoundAVX512(L *int8, x *float32, add, d float32, lo, hi, off int32, n int)
// divRoundSSE2 for n elements (a multiple of 16), sixteen at a time.
TEXT ·divRoundAVX512(SB), NOSPLIT, $0-48
	MOVQ   L+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+40(FP), CX
	VBROADCASTSS add+16(FP), Z13
	VBROADCASTSS d+20(FP), Z0
	ZNBOUNDS(lo+24(FP), hi+28(FP))
	MOVL   off+32(FP), DX
	VPBROADCASTD DX, Z8

zdivround:
	VMOVUPS (SI), Z1
	VADDPS  Z13, Z1, Z1
	VDIVPS  Z0, Z1, Z1
	VADDPS  Z3, Z1, Z1
	VPANDD  Z4, Z1, Z1
	VPSUBD  Z5, Z1, Z1
	VPMAXSD Z6, Z1, Z1
	VPMINSD Z7, Z1, Z1
	VPADDD  Z8, Z1, Z1
	VPMOVSDB Z1, (DI)
	ADDQ    $64, SI
	ADDQ    $16, DI
	SUBQ    $16, CX
	JNZ     zdivround
	VZEROUPPER
	RET

// KTRANSPOSE8(b, S) stores elements 8b..8b+7 of the eight groups at SI,
// S bytes apart, transposed: element i of group g at x[8i+g] of the
// qkx2Oct at DI; an 8×8 transpose in registers (unpack pairs, then quads,
// then 128-bit halves). Clobbers Y0-Y15.
#define KTRANSPOSE8(b, S) \
	VMOVUPS    (32*b)(SI), Y0; \
	VMOVUPS    (1*S+32*b)(SI), Y1; \
	VMOVUPS    (2*S+32*b)(SI), Y2; \
	VMOVUPS    (3*S+32*b)(SI), Y3; \
	VMOVUPS    (4*S+32*b)(SI), Y4; \
	VMOVUPS    (5*S+32*b)(SI), Y5; \
	VMOVUPS    (6*S+32*b)(SI), Y6; \
	VMOVUPS    (7*S+32*b)(SI), Y7; \
	T8(); \
	VMOVUPS    Y8, (KX+256*b)(DI); \
	VMOVUPS    Y9, (KX+256*b+32)(DI); \
	VMOVUPS    Y10, (KX+256*b+64)(DI); \
	VMOVUPS    Y11, (KX+256*b+96)(DI); \
	VMOVUPS    Y12, (KX+256*b+128)(DI); \
	VMOVUPS    Y13, (KX+256*b+160)(DI); \
	VMOVUPS    Y14, (KX+256*b+192)(DI); \
	VMOVUPS    Y15, (KX+256*b+224)(DI)

// func q2Start8AVX2(x *float32, o *qkx2Oct)
//
// qkx2Start(3, ·, |x|, ·, ·, true) for the eight groups of 16 at x, group g
// in lane g: the first pass stores x transposed (KTRANSPOSE8) and its
// weights, and takes mn, mx, Σw and Σw·x in element order; the second the first guess's levels and error. A flat
// group (mx = mn) keeps qkx2Start's zeros: xm, levels, Σw, Σw·x, scale
// and error (its levels come out 0 unmasked: its xm is 0 and iscale
// infinite or NaN, whose product is the default NaN, of level 0). Each
// product's operands are in the order of qkx2Start's compiled code (w·x
// for element 0, x·w after, xm·iscale), which decides the payload and sign
// of a NaN made of two, and a NaN's payload becomes a level.
TEXT ·q2Start8AVX2(SB), NOSPLIT, $0-16
	MOVQ         x+0(FP), SI
	MOVQ         o+8(FP), DI
	KTRANSPOSE8(0, 64)
	KTRANSPOSE8(1, 64)
	MOVL         $0x7FFFFFFF, AX
	VMOVD         AX, X15
	VPBROADCASTD X15, Y15

	// Element 0 starts mn (Y10), mx (Y11), Σw (Y8) and Σw·x (Y9).
	VMOVUPS KX(DI), Y0
	VANDPS  Y15, Y0, Y1
	VMOVUPS Y1, KW(DI)
	VMOVAPS Y0, Y10
	VMOVAPS Y0, Y11
	VMOVAPS Y1, Y8
	VMULPS  Y0, Y1, Y9
	MOVQ    $32, R8
	MOVQ    $15, CX

q2start:
	VMOVUPS    KX(DI)(R8*1), Y0
	VANDPS     Y15, Y0, Y1
	VMOVUPS    Y1, KW(DI)(R8*1)
	// mn = x < mn ? x : mn, mx = x > mx ? x : mx (NaN keeps either).
	VMINPS     Y10, Y0, Y10
	VMAXPS     Y11, Y0, Y11
	VADDPS     Y1, Y8, Y8
	VMULPS     Y1, Y0, Y2
	VADDPS     Y2, Y9, Y9
	ADDQ       $32, R8
	DECQ       CX
	JNZ        q2start

	// mn = 0 < mn ? 0 : mn; Y7 = flat (mx == mn).
	VXORPS  Y12, Y12, Y12
	VCMPPS  $1, Y10, Y12, Y2
	VANDNPS Y10, Y2, Y10
	VCMPPS  $0, Y10, Y11, Y7
	VMOVUPS Y10, KMN(DI)
	VMOVUPS Y10, KMNSTART(DI)
	VMOVUPS Y11, KMX(DI)
	VANDNPS Y8, Y7, Y8
	VMOVUPS Y8, KSUMW(DI)
	VANDNPS Y9, Y7, Y9
	VMOVUPS Y9, KSUMX(DI)

	// Y0 = iscale = 3/(mx - mn), Y6 = scale = 1/iscale.
	MOVL         $0x40400000, AX
	VMOVD         AX, X0
	VPBROADCASTD X0, Y0
	VSUBPS       Y10, Y11, Y2
	VDIVPS       Y2, Y0, Y0
	MOVL         $0x3F800000, AX
	VMOVD         AX, X6
	VPBROADCASTD X6, Y6
	VDIVPS       Y0, Y6, Y6
	VANDNPS      Y6, Y7, Y2
	VMOVUPS      Y2, KSCALE(DI)

	// nearestInt's constants in Y3-Y5, the levels' bound 3 in Y13.
	YNCONSTS
	MOVL         $3, AX
	VMOVD         AX, X13
	VPBROADCASTD X13, Y13
	VXORPS       Y9, Y9, Y9
	XORQ         R8, R8
	MOVQ         $16, CX

q2guess:
	// xm = x - mn; l = clamp(nearestInt(iscale·xm), 0, 3);
	// error += w·|scale·l + mn - x|.
	VMOVUPS   KX(DI)(R8*1), Y1
	VSUBPS    Y10, Y1, Y2
	VANDNPS   Y2, Y7, Y2
	VMOVUPS   Y2, KXM(DI)(R8*1)
	VMULPS    Y0, Y2, Y2
	VADDPS    Y3, Y2, Y2
	VPAND     Y4, Y2, Y2
	VPSUBD    Y5, Y2, Y2
	VPMAXSD   Y12, Y2, Y2
	VPMINSD   Y13, Y2, Y2
	VCVTDQ2PS Y2, Y2
	VMOVUPS   Y2, KL(DI)(R8*1)
	VMULPS    Y6, Y2, Y2
	VADDPS    Y10, Y2, Y2
	VSUBPS    Y1, Y2, Y2
	VANDPS    Y15, Y2, Y2
	VMULPS    KW(DI)(R8*1), Y2, Y2
	VADDPS    Y2, Y9, Y9
	ADDQ      $32, R8
	DECQ      CX
	JNZ       q2guess
	VANDNPS   Y9, Y7, Y9
	VMOVUPS   Y9, KBEST(DI)
	VZEROUPPER
	RET

// func qkx2Start8AVX2(s *qkx2Oct, x *float32, nmax int32)
//
// qkx2Start4SSE2 for the eight groups of 32 at x at once, group g in lane
// g: the same operations on each lane, with their operands in the same
// order.
TEXT ·qkx2Start8AVX2(SB), NOSPLIT, $0-20
	MOVQ         s+0(FP), DI
	MOVQ         x+8(FP), SI
	KTRANSPOSE8(0, 128)
	KTRANSPOSE8(1, 128)
	KTRANSPOSE8(2, 128)
	KTRANSPOSE8(3, 128)
	// Y12 = Σx² in element order.
	VXORPS       Y12, Y12, Y12
	XORQ         R8, R8

k4sumsq:
	VMOVUPS KX(DI)(R8*1), Y0
	VMULPS  Y0, Y0, Y8
	VADDPS  Y8, Y12, Y12
	ADDQ    $32, R8
	CMPQ    R8, $1024
	JNE     k4sumsq

	// Y13 = av = sqrt(Σx²/32), Y14 = 0x7FFFFFFF.
	MOVL         $0x42000000, AX
	VMOVD         AX, X8
	VPBROADCASTD X8, Y8
	VDIVPS       Y8, Y12, Y12
	VSQRTPS      Y12, Y13
	MOVL         $0x7FFFFFFF, AX
	VMOVD         AX, X14
	VPBROADCASTD X14, Y14
	// Element 0 starts mn (Y10), mx (Y11), Σw (Y1) and Σw·x (Y2).
	VMOVUPS      KX(DI), Y0
	VANDPS       Y14, Y0, Y9
	VADDPS       Y13, Y9, Y9
	VMOVUPS      Y9, KW(DI)
	VMOVAPS      Y0, Y10
	VMOVAPS      Y0, Y11
	VMOVAPS      Y9, Y1
	VMULPS       Y0, Y9, Y2
	MOVQ         $32, R8

k4weight:
	// w = |x| + av; mn = x < mn ? x : mn; mx = x > mx ? x : mx;
	// Σw += w; Σw·x += w·x.
	VMOVUPS KX(DI)(R8*1), Y0
	VANDPS  Y14, Y0, Y9
	VADDPS  Y13, Y9, Y9
	VMOVUPS Y9, KW(DI)(R8*1)
	VMINPS  Y10, Y0, Y10
	VMAXPS  Y11, Y0, Y11
	VADDPS  Y9, Y1, Y1
	VMULPS  Y0, Y9, Y9
	VADDPS  Y9, Y2, Y2
	ADDQ    $32, R8
	CMPQ    R8, $1024
	JNE     k4weight

	// mn = 0 < mn ? 0 : mn
	VXORPS  Y8, Y8, Y8
	VCMPPS  $1, Y10, Y8, Y8
	VANDNPS Y10, Y8, Y10
	VMOVUPS Y10, KMN(DI)
	VMOVUPS Y10, KMNSTART(DI)
	VMOVUPS Y11, KMX(DI)
	VMOVUPS Y1, KSUMW(DI)
	VMOVUPS Y2, KSUMX(DI)
	// Y0 = iscale = nmax/(mx - mn), Y9 = scale = 1/iscale.
	MOVL         nmax+16(FP), AX
	VCVTSI2SSL   AX, X0, X0
	VBROADCASTSS X0, Y0
	VSUBPS       Y10, Y11, Y11
	VDIVPS       Y11, Y0, Y0
	MOVL         $0x3F800000, BX
	VMOVD         BX, X9
	VPBROADCASTD X9, Y9
	VDIVPS       Y0, Y9, Y9
	VMOVUPS      Y9, KSCALE(DI)
	// nearestInt's constants in Y3-Y5, the levels' bounds 0 and nmax in
	// Y6 and Y7.
	YNCONSTS
	VPXOR        Y6, Y6, Y6
	VMOVD         AX, X7
	VPBROADCASTD X7, Y7
	VXORPS       Y12, Y12, Y12
	XORQ         R8, R8

k4guess:
	// xm = x - mn; l = clamp(nearestInt(xm·iscale), 0, nmax);
	// error += ((l·scale + mn) - x)²·w.
	VMOVUPS   KX(DI)(R8*1), Y1
	VSUBPS    Y10, Y1, Y8
	VMOVUPS   Y8, KXM(DI)(R8*1)
	VMULPS    Y0, Y8, Y8
	VADDPS    Y3, Y8, Y8
	VPAND     Y4, Y8, Y8
	VPSUBD    Y5, Y8, Y8
	VPMAXSD   Y6, Y8, Y8
	VPMINSD   Y7, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VMOVUPS   Y8, KL(DI)(R8*1)
	VMULPS    Y9, Y8, Y8
	VADDPS    Y10, Y8, Y8
	VSUBPS    Y1, Y8, Y8
	VMULPS    Y8, Y8, Y8
	VMULPS    KW(DI)(R8*1), Y8, Y8
	VADDPS    Y8, Y12, Y12
	ADDQ      $32, R8
	CMPQ      R8, $1024
	JNE       k4guess
	VMOVUPS   Y12, KBEST(DI)
	VZEROUPPER
	RET

// The q3_K search on sixteen lanes (q3Search16AVX512): the hex of
// qxSearch16AVX512 (PX, PW, PWX, PL), sums sumlx in Z1 and suml2 in Z2,
// nearestInt's constants and lo, hi in Z3-Z7. Each operation is
// q3Search8SSE2's, with its operands in the same order.

// R = float32(clamp(nearestInt(R), lo, hi)).
#define Q3ROUND(R) \
	VADDPS    Z3, R, R; \
	VPANDD    Z4, R, R; \
	VPSUBD    Z5, R, R; \
	VPMAXSD   Z6, R, R; \
	VPMINSD   Z7, R, R; \
	VCVTDQ2PS R, R

// The first levels of element off of the hex at B at iscale IS, adding wx·l
// to S1 and (w·l)·l to S2.
#define Q3LEVELX(B, off, IS, S1, S2) \
	VMOVUPS (PX+off)(B), Z8; \
	VMULPS  IS, Z8, Z8; \
	Q3ROUND(Z8); \
	VMOVUPS Z8, (PL+off)(B); \
	VMOVUPS (PWX+off)(B), Z9; \
	VMULPS  Z8, Z9, Z9; \
	VADDPS  Z9, S1, S1; \
	VMOVUPS (PW+off)(B), Z10; \
	VMULPS  Z8, Z10, Z10; \
	VMULPS  Z8, Z10, Z10; \
	VADDPS  Z10, S2, S2

#define Q3LEVEL(off) Q3LEVELX(DI, off, Z20, Z1, Z2)

// One greedy step for element off of the hex at B, sums sumlx in S1 and
// suml2 in S2: without its level, slx and sl2; where 0 < slx the new level
// nearestInt(x·sl2/slx), clamped, taken (level, sumlx, suml2) in the lanes
// KM where it differs, 0 < sl2' and sumlx²·sl2' < slx'²·suml2; KC collects
// the lanes that took one. Clobbers Z8-Z12, Z14 and Z16.
#define Q3GREEDYX(B, off, S1, S2, KM, KC) \
	VMOVUPS   (PL+off)(B), Z8; \
	VMOVUPS   (PWX+off)(B), Z9; \
	VMULPS    Z8, Z9, Z9; \
	VMOVAPS   S1, Z10; \
	VSUBPS    Z9, Z10, Z10; \
	VPXORD    Z11, Z11, Z11; \
	VCMPPS    $1, Z10, Z11, KM; \
	VMOVUPS   (PW+off)(B), Z12; \
	VMULPS    Z8, Z12, Z12; \
	VMULPS    Z8, Z12, Z12; \
	VMOVAPS   S2, Z16; \
	VSUBPS    Z12, Z16, Z16; \
	VMOVUPS   (PX+off)(B), Z14; \
	VMULPS    Z16, Z14, Z14; \
	VDIVPS    Z10, Z14, Z14; \
	Q3ROUND(Z14); \
	VCMPPS    $4, Z8, Z14, KM, KM; \
	VMOVUPS   (PWX+off)(B), Z9; \
	VMULPS    Z14, Z9, Z9; \
	VADDPS    Z9, Z10, Z10; \
	VMOVUPS   (PW+off)(B), Z12; \
	VMULPS    Z14, Z12, Z12; \
	VMULPS    Z14, Z12, Z12; \
	VADDPS    Z12, Z16, Z16; \
	VCMPPS    $1, Z16, Z11, KM, KM; \
	VMULPS    Z10, Z10, Z9; \
	VMULPS    S2, Z9, Z9; \
	VMULPS    S1, S1, Z12; \
	VMULPS    Z16, Z12, Z12; \
	VCMPPS    $1, Z9, Z12, KM, KM; \
	KORW      KM, KC, KC; \
	VMOVUPS   Z14, KM, (PL+off)(B); \
	VMOVAPS   Z10, KM, S1; \
	VMOVAPS   Z16, KM, S2

#define Q3GREEDY(off) Q3GREEDYX(DI, off, Z1, Z2, K1, K3)

// The step of four searches at once, the hexes at DI, R13, R14 and R11
// (sums Z1, Z2; Z17, Z18; Z19, Z22; Z23, Z24; the lanes that took a level
// collected in K3, K4, K6, K7). Their chains of dependent operations, one
// per element of a group, are independent of each other, and overlap.
#define Q3GREEDY4(off) \
	Q3GREEDYX(DI, off, Z1, Z2, K1, K3); \
	Q3GREEDYX(R13, off, Z17, Z18, K1, K4); \
	Q3GREEDYX(R14, off, Z19, Z22, K1, K6); \
	Q3GREEDYX(R11, off, Z23, Z24, K1, K7)

// The quads of a qxScratch (QUADS bytes apart), its hex (QXHEX) and its size
// (QXSCRATCH); see TestQxScratchLayout.
#define QUADS 1328
#define QXHEX 5312
#define QXSCRATCH 13760

// Q3START(B, S1, S2): the hex at B (and DI) from the quads of the qxScratch
// whose address is in AX (PINALL), iscale = start/mx in Z20 (start in Z15),
// and the first levels with their sums in S1 and S2; AX then steps back to
// the qxScratch before. Needs ZNCONSTS and lo, hi in Z6, Z7.
#define Q3START(B, S1, S2) \
	LEAQ    QUADS(AX), BX; \
	LEAQ    (2*QUADS)(AX), R10; \
	LEAQ    (3*QUADS)(AX), R12; \
	LEAQ    QXHEX(AX), B; \
	MOVQ    B, DI; \
	PINALL; \
	VDIVPS  Z13, Z15, Z20; \
	VPXORD  Z1, Z1, Z1; \
	VPXORD  Z2, Z2, Z2; \
	PALL(Q3LEVEL); \
	VMOVAPS Z1, S1; \
	VMOVAPS Z2, S2; \
	SUBQ    $QXSCRATCH, AX

// R = 0 < S2 ? S1/S2 : 0, the scale of sums S1 and S2.
#define Q3SCALE(S1, S2, R) \
	VDIVPS    S2, S1, R; \
	VPXORD    Z10, Z10, Z10; \
	VCMPPS    $1, S2, Z10, K5; \
	VMOVAPS.Z R, K5, R

// The scale of sums S1 and S2 to OFF(R8).
#define Q3SCALEOUT(S1, S2, OFF) \
	Q3SCALE(S1, S2, Z9); \
	VMOVUPS Z9, OFF(R8)

// The levels of the hex at B plus R9 to OFF(SI) (HEXOUT).
#define Q3LEVELSOUT(B, OFF) \
	MOVQ B, DI; \
	LEAQ OFF(SI), R8; \
	HEXOUT(R8, R9)

// func q3Search16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32)
// q3Search8SSE2 for the groups of a, b, c and d (lanes 0-3, 4-7, 8-11,
// 12-15) at once, with o as the interleaved working copy; rounds continue
// until no lane changes. The levels plus nmax go to L[:256], group by
// group, and the scales to scales[:16].
TEXT ·q3Search16AVX512(SB), NOSPLIT, $0-84
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   c+16(FP), R10
	MOVQ   d+24(FP), R12
	MOVQ   o+32(FP), DI
	MOVQ   rounds+64(FP), CX
	// The hex from the quads; Z20 = iscale = start/mx of the sixteen groups.
	PINALL
	VBROADCASTSS start+56(FP), Z15
	VDIVPS       Z13, Z15, Z20
	ZNBOUNDS(lo+72(FP), hi+76(FP))
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	PALL(Q3LEVEL)
	TESTQ        CX, CX
	JLE          q3final

q3round:
	KXORW    K3, K3, K3
	PALL(Q3GREEDY)
	KORTESTW K3, K3
	JZ       q3final
	DECQ     CX
	JNZ      q3round

q3final:
	Q3SCALE(Z1, Z2, Z9)
	HEXDONE(Z9)
	VZEROUPPER
	RET

// func q3Search4x16AVX512(s *[4]qxScratch, L *[4][256]int8, scales *[4][16]float32, start float32, rounds int, lo, hi, nmax int32)
// q3Search16AVX512 for four super-blocks at once, each with its quads and
// hex in a qxScratch of s: the four searches' greedy steps alternate,
// element by element, and the rounds go on while any changes a lane (a
// round that changes none changes nothing, so a search that has settled
// stays as it is). The levels plus nmax go to L, the scales to scales.
TEXT ·q3Search4x16AVX512(SB), NOSPLIT, $0-52
	ZNBOUNDS(lo+40(FP), hi+44(FP))
	VBROADCASTSS start+24(FP), Z15
	// The last qxScratch first: the first one's sums are Z1 and Z2, in
	// which Q3START sums.
	MOVQ         s+0(FP), AX
	ADDQ         $(3*QXSCRATCH), AX
	Q3START(R11, Z23, Z24)
	Q3START(R14, Z19, Z22)
	Q3START(R13, Z17, Z18)
	Q3START(R8, Z1, Z2)
	MOVQ         rounds+32(FP), CX
	TESTQ        CX, CX
	JLE          q3final4

q3round4:
	KXORW    K3, K3, K3
	KXORW    K4, K4, K4
	KXORW    K6, K6, K6
	KXORW    K7, K7, K7
	PALL(Q3GREEDY4)
	KORW     K3, K4, K2
	KORW     K6, K2, K2
	KORTESTW K7, K2
	JZ       q3final4
	DECQ     CX
	JNZ      q3round4

q3final4:
	// The scales first: HEXOUT clobbers the sums.
	MOVQ  DI, R12
	MOVQ  scales+16(FP), R8
	Q3SCALEOUT(Z1, Z2, 0)
	Q3SCALEOUT(Z17, Z18, 64)
	Q3SCALEOUT(Z19, Z22, 128)
	Q3SCALEOUT(Z23, Z24, 192)
	MOVQ  L+8(FP), SI
	MOVL  nmax+48(FP), R9
	Q3LEVELSOUT(R12, 0)
	Q3LEVELSOUT(R13, 256)
	Q3LEVELSOUT(R14, 512)
	Q3LEVELSOUT(R11, 768)
	VZEROUPPER
	RET

// The q3_K search on eight lanes (q3Search16AVX2): the oct of qxSearch8AVX2
// (OX, OW, OWX, OL), lo and hi in Y6 and Y7, nearestInt's constants in
// memory (q3yconst), which leaves registers for two searches.
// Each operation is q3Search8SSE2's, with its operands in the same order, the
// masks as vectors.
DATA q3yconst<>+0(SB)/8, $0x4B4000004B400000
DATA q3yconst<>+8(SB)/8, $0x4B4000004B400000
DATA q3yconst<>+16(SB)/8, $0x4B4000004B400000
DATA q3yconst<>+24(SB)/8, $0x4B4000004B400000
DATA q3yconst<>+32(SB)/8, $0x007FFFFF007FFFFF
DATA q3yconst<>+40(SB)/8, $0x007FFFFF007FFFFF
DATA q3yconst<>+48(SB)/8, $0x007FFFFF007FFFFF
DATA q3yconst<>+56(SB)/8, $0x007FFFFF007FFFFF
DATA q3yconst<>+64(SB)/8, $0x0040000000400000
DATA q3yconst<>+72(SB)/8, $0x0040000000400000
DATA q3yconst<>+80(SB)/8, $0x0040000000400000
DATA q3yconst<>+88(SB)/8, $0x0040000000400000
GLOBL q3yconst<>(SB), RODATA|NOPTR, $96

// R = float32(clamp(nearestInt(R), lo, hi)).
#define Q3YROUND(R) \
	VADDPS    q3yconst<>+0(SB), R, R; \
	VPAND     q3yconst<>+32(SB), R, R; \
	VPSUBD    q3yconst<>+64(SB), R, R; \
	VPMAXSD   Y6, R, R; \
	VPMINSD   Y7, R, R; \
	VCVTDQ2PS R, R

// The first levels of element off of the oct at B at iscale Y14, adding
// wx·l to S1 and (w·l)·l to S2.
#define Q3YLEVELX(B, off, S1, S2) \
	VMOVUPS (OX+off)(B), Y8; \
	VMULPS  Y14, Y8, Y8; \
	Q3YROUND(Y8); \
	VMOVUPS Y8, (OL+off)(B); \
	VMOVUPS (OWX+off)(B), Y9; \
	VMULPS  Y8, Y9, Y9; \
	VADDPS  Y9, S1, S1; \
	VMOVUPS (OW+off)(B), Y10; \
	VMULPS  Y8, Y10, Y10; \
	VMULPS  Y8, Y10, Y10; \
	VADDPS  Y10, S2, S2

#define Q3YLEVEL(off) Q3YLEVELX(DI, off, Y1, Y2)
#define Q3YLEVELB(off) Q3YLEVELX(R13, off, Y3, Y4)

// Q3GREEDYX on eight lanes for the oct at B, sums S1 and S2, the lanes
// that took a level collected in C; the mask in Y0. Clobbers Y0, Y8-Y12
// and Y15.
#define Q3YGREEDYX(B, off, S1, S2, C) \
	VMOVUPS   (OL+off)(B), Y8; \
	VMOVUPS   (OWX+off)(B), Y9; \
	VMULPS    Y8, Y9, Y9; \
	VSUBPS    Y9, S1, Y10; \
	VXORPS    Y11, Y11, Y11; \
	VCMPPS    $1, Y10, Y11, Y0; \
	VMOVUPS   (OW+off)(B), Y12; \
	VMULPS    Y8, Y12, Y12; \
	VMULPS    Y8, Y12, Y12; \
	VSUBPS    Y12, S2, Y15; \
	VMOVUPS   (OX+off)(B), Y12; \
	VMULPS    Y15, Y12, Y12; \
	VDIVPS    Y10, Y12, Y12; \
	Q3YROUND(Y12); \
	VCMPPS    $4, Y8, Y12, Y9; \
	VANDPS    Y9, Y0, Y0; \
	VMOVUPS   (OWX+off)(B), Y9; \
	VMULPS    Y12, Y9, Y9; \
	VADDPS    Y9, Y10, Y10; \
	VMOVUPS   (OW+off)(B), Y9; \
	VMULPS    Y12, Y9, Y9; \
	VMULPS    Y12, Y9, Y9; \
	VADDPS    Y9, Y15, Y15; \
	VCMPPS    $1, Y15, Y11, Y9; \
	VANDPS    Y9, Y0, Y0; \
	VMULPS    Y10, Y10, Y9; \
	VMULPS    S2, Y9, Y9; \
	VMULPS    S1, S1, Y11; \
	VMULPS    Y15, Y11, Y11; \
	VCMPPS    $1, Y9, Y11, Y11; \
	VANDPS    Y11, Y0, Y0; \
	VORPS     Y0, C, C; \
	VBLENDVPS Y0, Y12, Y8, Y8; \
	VMOVUPS   Y8, (OL+off)(B); \
	VBLENDVPS Y0, Y10, S1, S1; \
	VBLENDVPS Y0, Y15, S2, S2

// Two searches' steps, the oct at DI (Y1, Y2, Y13) and the one at R13 (Y3,
// Y4, Y5), alternating: their chains of dependent operations overlap.
#define Q3YGREEDY2(off) \
	Q3YGREEDYX(DI, off, Y1, Y2, Y13); \
	Q3YGREEDYX(R13, off, Y3, Y4, Y5)

// R = 0 < S2 ? S1/S2 : 0, the scale of sums S1 and S2; clobbers Y10.
#define Q3YSCALE(S1, S2, R) \
	VDIVPS S2, S1, R; \
	VXORPS Y10, Y10, Y10; \
	VCMPPS $1, S2, Y10, Y10; \
	VANDPS Y10, R, R

// func q3Search16AVX2(a, b, c, d *quads, o *[2]qxOct, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32)
// q3Search8SSE2 for the groups of a and b (in o[0]) and of c and d (in
// o[1]) in the eight lanes of AVX2 vectors, the two searches' steps
// alternating element by element; the rounds go on while either changes a
// lane (a round that changes none changes nothing). The levels plus nmax go
// to L[:256], group by group, and the scales to scales[:16].
TEXT ·q3Search16AVX2(SB), NOSPLIT, $0-84
	MOVL         lo+72(FP), R8
	MOVL         hi+76(FP), R9
	VMOVD         R8, X6
	VPBROADCASTD X6, Y6
	VMOVD         R9, X7
	VPBROADCASTD X7, Y7
	MOVQ         rounds+64(FP), CX
	// Search B: the oct o[1] from c and d, its first levels.
	MOVQ         c+16(FP), AX
	MOVQ         d+24(FP), BX
	MOVQ         o+32(FP), DI
	LEAQ         QXOCT(DI), DI
	MOVQ         DI, R13
	OINALL
	VBROADCASTSS start+56(FP), Y14
	VDIVPS       Y13, Y14, Y14
	VXORPS       Y3, Y3, Y3
	VXORPS       Y4, Y4, Y4
	OALL(Q3YLEVELB)
	// Search A: o[0] from a and b.
	MOVQ         a+0(FP), AX
	MOVQ         b+8(FP), BX
	MOVQ         o+32(FP), DI
	OINALL
	VBROADCASTSS start+56(FP), Y14
	VDIVPS       Y13, Y14, Y14
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	OALL(Q3YLEVEL)
	TESTQ        CX, CX
	JLE          q3y2final

q3y2round:
	VXORPS    Y13, Y13, Y13
	VXORPS    Y5, Y5, Y5
	OALL(Q3YGREEDY2)
	VORPS     Y5, Y13, Y13
	VMOVMSKPS Y13, DX
	TESTL     DX, DX
	JZ        q3y2final
	DECQ      CX
	JNZ       q3y2round

q3y2final:
	MOVQ    scales+48(FP), R8
	Q3YSCALE(Y1, Y2, Y9)
	VMOVUPS Y9, (R8)
	Q3YSCALE(Y3, Y4, Y9)
	VMOVUPS Y9, 32(R8)
	MOVQ    L+40(FP), R8
	MOVL    nmax+80(FP), R9
	OCTOUT(R8, R9)
	MOVQ    R13, DI
	ADDQ    $128, R8
	OCTOUT(R8, R9)
	VZEROUPPER
	RET
