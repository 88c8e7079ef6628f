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

// TRITS(R): R holds 16 bytes b; writes the 16 values
// float32(int((uint8(b·mul)·3) >> 8) - 1)·d to (DI) and advances DI.
// X12 = multiplier words, X13 = 0x00FF words, X14 = 3 words, X11 = 1 dwords,
// X15 = d, X10 = 0.
#define TRITS(R) \
	MOVO   R, X1; \
	PUNPCKLBW X10, X1; \
	MOVO   R, X2; \
	PUNPCKHBW X10, X2; \
	PMULLW X12, X1; \
	PMULLW X12, X2; \
	PAND   X13, X1; \
	PAND   X13, X2; \
	PMULLW X14, X1; \
	PMULLW X14, X2; \
	PSRLW  $8, X1; \
	PSRLW  $8, X2; \
	MOVO   X1, X3; \
	PUNPCKLWL X10, X1; \
	PUNPCKHWL X10, X3; \
	MOVO   X2, X4; \
	PUNPCKLWL X10, X2; \
	PUNPCKHWL X10, X4; \
	PSUBL  X11, X1; \
	PSUBL  X11, X3; \
	PSUBL  X11, X2; \
	PSUBL  X11, X4; \
	CVTPL2PS X1, X1; \
	CVTPL2PS X3, X3; \
	CVTPL2PS X2, X2; \
	CVTPL2PS X4, X4; \
	MULPS  X15, X1; \
	MULPS  X15, X3; \
	MULPS  X15, X2; \
	MULPS  X15, X4; \
	MOVUPS X1, 0(DI); \
	MOVUPS X3, 16(DI); \
	MOVUPS X2, 32(DI); \
	MOVUPS X4, 48(DI); \
	ADDQ   $64, DI

// func tq1BlockSSE2(dst *float32, b *byte, d float32)
// The 256 elements of a tq1_0 block: trit n (0..4) of bytes 0..31, of
// bytes 32..47, then trit n (0..3) of bytes 48..51, as decodeTQ1_0 extracts
// them (tritAt).
TEXT ·tq1BlockSSE2(SB), NOSPLIT, $0-20
	MOVQ   dst+0(FP), DI
	MOVQ   b+8(FP), SI
	MOVSS  d+16(FP), X15
	SHUFPS $0, X15, X15
	PXOR   X10, X10
	MOVL   $0x00010001, AX
	MOVL   AX, X11
	PSHUFL $0, X11, X11
	MOVO   X11, X12             // multiplier 1 (words)
	PUNPCKLWL X10, X11          // 1 as dwords
	MOVL   $0x00FF00FF, AX
	MOVL   AX, X13
	PSHUFL $0, X13, X13
	MOVL   $0x00030003, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	MOVOU  0(SI), X8
	MOVOU  16(SI), X9
	MOVOU  32(SI), X0
	MOVO   X0, X7
	MOVQ   $5, CX
t1loop:
	TRITS(X8)
	TRITS(X9)
	PMULLW X14, X12
	DECQ   CX
	JNZ    t1loop
	MOVO   X14, X12
	PSRLW  $1, X12              // back to 1: 3 >> 1
	MOVQ   $5, CX
t2loop:
	TRITS(X7)
	PMULLW X14, X12
	DECQ   CX
	JNZ    t2loop
	// Bytes 48..51, trits 0..3: element 240 + 4n + j.
	MOVO   X14, X12
	PSRLW  $1, X12
	MOVL   48(SI), AX
	MOVL   AX, X7
	PUNPCKLBW X10, X7
	MOVQ   $4, CX
t3loop:
	MOVO   X7, X1
	PMULLW X12, X1
	PAND   X13, X1
	PMULLW X14, X1
	PSRLW  $8, X1
	PUNPCKLWL X10, X1
	PSUBL  X11, X1
	CVTPL2PS X1, X1
	MULPS  X15, X1
	MOVUPS X1, 0(DI)
	ADDQ   $16, DI
	PMULLW X14, X12
	DECQ   CX
	JNZ    t3loop
	RET

// EXPAND16(R, OFF, D, out): the 16 bytes of R (values 0..255), minus the
// dword offset OFF, times D, to out(DI); clobbers R, X1..X3, needs X6 = 0.
#define EXPAND16(R, OFF, D, out) \
	MOVO   R, X2; \
	PUNPCKLBW X6, R; \
	PUNPCKHBW X6, X2; \
	MOVO   R, X1; \
	PUNPCKLWL X6, R; \
	PUNPCKHWL X6, X1; \
	MOVO   X2, X3; \
	PUNPCKLWL X6, X2; \
	PUNPCKHWL X6, X3; \
	PSUBL  OFF, R; \
	PSUBL  OFF, X1; \
	PSUBL  OFF, X2; \
	PSUBL  OFF, X3; \
	CVTPL2PS R, R; \
	CVTPL2PS X1, X1; \
	CVTPL2PS X2, X2; \
	CVTPL2PS X3, X3; \
	MULPS  D, R; \
	MULPS  D, X1; \
	MULPS  D, X2; \
	MULPS  D, X3

#define STORE16(R, out) \
	MOVUPS R, (out)(DI); \
	MOVUPS X1, (out+16)(DI); \
	MOVUPS X2, (out+32)(DI); \
	MOVUPS X3, (out+48)(DI)

// SUB16(M): subtract M from the four vectors of EXPAND16(X0, …).
#define SUB16(M) \
	SUBPS  M, X0; \
	SUBPS  M, X1; \
	SUBPS  M, X2; \
	SUBPS  M, X3

// func tq2BlocksSSE2(dst *float32, src *byte, ds *float32, n int)
// n tq2_0 blocks (66 bytes: qs[64], d) with scales ds[:n]: element
// 128(j/32) + 32l + m is ((qs[j+m] >> 2l) & 3) - 1, times d.
TEXT ·tq2BlocksSSE2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   ds+16(FP), DX
	MOVQ   n+24(FP), CX
	TESTQ  CX, CX
	JLE    t2done
	PXOR   X6, X6
	MOVL   $0x03030303, AX
	MOVL   AX, X7
	PSHUFL $0, X7, X7
	MOVL   $1, AX
	MOVL   AX, X8
	PSHUFL $0, X8, X8

#define T2(in, shift, out) \
	MOVOU  in(SI), X0; \
	PSRLW  $shift, X0; \
	PAND   X7, X0; \
	EXPAND16(X0, X8, X9, out); \
	STORE16(X0, out)

t2blk:
	MOVSS  (DX), X9
	SHUFPS $0, X9, X9
	T2(0, 0, 0); T2(16, 0, 64)
	T2(0, 2, 128); T2(16, 2, 192)
	T2(0, 4, 256); T2(16, 4, 320)
	T2(0, 6, 384); T2(16, 6, 448)
	T2(32, 0, 512); T2(48, 0, 576)
	T2(32, 2, 640); T2(48, 2, 704)
	T2(32, 4, 768); T2(48, 4, 832)
	T2(32, 6, 896); T2(48, 6, 960)
	ADDQ   $66, SI
	ADDQ   $4, DX
	ADDQ   $1024, DI
	DECQ   CX
	JNZ    t2blk

t2done:
	RET

// func k4BlocksSSE2(dst *float32, qs *byte, stride int, dm *float32, n int)
// n q4_K blocks: qs points at the first block's qs[128], stride is the
// block size; dm[16i..16i+15] are block i's d·sc and dmin·m of sub-blocks
// 0..7, interleaved (d0, m0, d1, m1, …). Element 64j + l is
// float32(d_{2j}·float32(qs[32j+l] & 15)) - m_{2j}, element 64j + 32 + l
// the same with the high nibble and sub-block 2j+1.
TEXT ·k4BlocksSSE2(SB), NOSPLIT, $0-40
	MOVQ   dst+0(FP), DI
	MOVQ   qs+8(FP), SI
	MOVQ   stride+16(FP), R8
	MOVQ   dm+24(FP), DX
	MOVQ   n+32(FP), CX
	TESTQ  CX, CX
	JLE    k4done
	PXOR   X6, X6
	PXOR   X8, X8
	MOVL   $0x0F0F0F0F, AX
	MOVL   AX, X7
	PSHUFL $0, X7, X7

#define K4(in, shift, D, M, out) \
	MOVOU  in(SI), X0; \
	PSRLW  $shift, X0; \
	PAND   X7, X0; \
	EXPAND16(X0, X8, D, out); \
	SUB16(M); \
	STORE16(X0, out)

#define K4SUB(j) \
	MOVSS  (16*j)(DX), X9; \
	SHUFPS $0, X9, X9; \
	MOVSS  (16*j+4)(DX), X10; \
	SHUFPS $0, X10, X10; \
	MOVSS  (16*j+8)(DX), X11; \
	SHUFPS $0, X11, X11; \
	MOVSS  (16*j+12)(DX), X12; \
	SHUFPS $0, X12, X12; \
	K4(32*j, 0, X9, X10, 256*j); \
	K4(32*j+16, 0, X9, X10, 256*j+64); \
	K4(32*j, 4, X11, X12, 256*j+128); \
	K4(32*j+16, 4, X11, X12, 256*j+192)

k4blk:
	K4SUB(0)
	K4SUB(1)
	K4SUB(2)
	K4SUB(3)
	ADDQ   R8, SI
	ADDQ   $64, DX
	ADDQ   $1024, DI
	DECQ   CX
	JNZ    k4blk

k4done:
	RET

// func tq2PackSSE2(q *byte, x *float32, id float32)
// The 64 code bytes of a tq2_0 block whose elements x·id are all below 2^22
// in magnitude: byte j+m (j = 0, 32) holds lroundf(x[4j+m+32n]·id) + 1 in
// bits 2n, 2n+1 for n = 0..3. lroundf is roundf's trunc(f) + trunc(2·frac).
TEXT ·tq2PackSSE2(SB), NOSPLIT, $0-20
	MOVQ   q+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVSS  id+16(FP), X15
	SHUFPS $0, X15, X15
	MOVL   $1, AX
	MOVL   AX, X14
	PSHUFL $0, X14, X14
	MOVL   $3, AX
	MOVL   AX, X13
	PSHUFL $0, X13, X13

// LROUND(off, n, ACC): ACC |= ((lroundf(x[off/4..]·id) + 1) & 3) << 2n.
#define LROUND(off, n, ACC) \
	MOVUPS off(SI), X0; \
	MULPS  X15, X0; \
	CVTTPS2PL X0, X1; \
	CVTPL2PS X1, X2; \
	SUBPS  X2, X0; \
	ADDPS  X0, X0; \
	CVTTPS2PL X0, X0; \
	PADDL  X0, X1; \
	PADDL  X14, X1; \
	PAND   X13, X1; \
	PSLLL  $(2*n), X1; \
	POR    X1, ACC

// FOUR(off, ACC): the four code bytes m..m+3 (as dwords) of the elements at
// off, off+128, off+256, off+384 bytes.
#define FOUR(off, ACC) \
	PXOR   ACC, ACC; \
	LROUND(off, 0, ACC); \
	LROUND(off+128, 1, ACC); \
	LROUND(off+256, 2, ACC); \
	LROUND(off+384, 3, ACC)

// SIXTEEN2(off, out): sixteen code bytes from element off/4.
#define SIXTEEN2(off, out) \
	FOUR(off, X4); \
	FOUR(off+16, X5); \
	PACKSSLW X5, X4; \
	FOUR(off+32, X6); \
	FOUR(off+48, X7); \
	PACKSSLW X7, X6; \
	PACKUSWB X6, X4; \
	MOVOU  X4, out(DI)

	SIXTEEN2(0, 0)
	SIXTEEN2(64, 16)
	SIXTEEN2(512, 32)
	SIXTEEN2(576, 48)
	RET

// func k5BlocksSSE2(dst *float32, qs, qh *byte, stride int, dm *float32, n int)
// k4BlocksSSE2 for q5_K: bit 2j (low nibbles) or 2j+1 (high nibbles) of
// qh[l] (32 bytes at qh, blocks stride apart) is bit 4 of the level.
TEXT ·k5BlocksSSE2(SB), NOSPLIT, $0-48
	MOVQ   dst+0(FP), DI
	MOVQ   qs+8(FP), SI
	MOVQ   qh+16(FP), BX
	MOVQ   stride+24(FP), R8
	MOVQ   dm+32(FP), DX
	MOVQ   n+40(FP), CX
	TESTQ  CX, CX
	JLE    k5done
	PXOR   X6, X6
	PXOR   X8, X8
	MOVL   $0x0F0F0F0F, AX
	MOVL   AX, X7
	PSHUFL $0, X7, X7
	MOVL   $0x01010101, AX
	MOVL   AX, X13
	PSHUFL $0, X13, X13

#define K5(in, hin, shift, hshift, D, M, out) \
	MOVOU  in(SI), X0; \
	PSRLW  $shift, X0; \
	PAND   X7, X0; \
	MOVOU  hin(BX), X5; \
	PSRLW  $hshift, X5; \
	PAND   X13, X5; \
	PSLLW  $4, X5; \
	POR    X5, X0; \
	EXPAND16(X0, X8, D, out); \
	SUB16(M); \
	STORE16(X0, out)

#define K5SUB(j) \
	MOVSS  (16*j)(DX), X9; \
	SHUFPS $0, X9, X9; \
	MOVSS  (16*j+4)(DX), X10; \
	SHUFPS $0, X10, X10; \
	MOVSS  (16*j+8)(DX), X11; \
	SHUFPS $0, X11, X11; \
	MOVSS  (16*j+12)(DX), X12; \
	SHUFPS $0, X12, X12; \
	K5(32*j, 0, 0, 2*j, X9, X10, 256*j); \
	K5(32*j+16, 16, 0, 2*j, X9, X10, 256*j+64); \
	K5(32*j, 0, 4, 2*j+1, X11, X12, 256*j+128); \
	K5(32*j+16, 16, 4, 2*j+1, X11, X12, 256*j+192)

k5blk:
	K5SUB(0)
	K5SUB(1)
	K5SUB(2)
	K5SUB(3)
	ADDQ   R8, SI
	ADDQ   R8, BX
	ADDQ   $64, DX
	ADDQ   $1024, DI
	DECQ   CX
	JNZ    k5blk

k5done:
	RET

// func q8BlocksAVX2(dst *float32, src *byte, ds *float32, n int)
// q8BlocksSSE2 eight elements per instruction: each 8 bytes sign-extended to
// eight int32, converted and multiplied by the block's scale.
TEXT ·q8BlocksAVX2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   ds+16(FP), DX
	MOVQ   n+24(FP), CX
	TESTQ  CX, CX
	JLE    q8ydone

q8yloop:
	VBROADCASTSS (DX), Y7
	VPMOVSXBD 2(SI), Y0
	VPMOVSXBD 10(SI), Y1
	VPMOVSXBD 18(SI), Y2
	VPMOVSXBD 26(SI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ   $34, SI
	ADDQ   $4, DX
	ADDQ   $128, DI
	DECQ   CX
	JNZ    q8yloop
	VZEROUPPER

q8ydone:
	RET

// YSPLAT(imm, X, Y): the dword imm in every lane of Y (X is Y's low half).
#define YSPLAT(imm, X, Y) \
	MOVL   imm, AX; \
	VMOVD  AX, X; \
	VPBROADCASTD X, Y

// YK4OUT(L, D, M, out): the eight levels in the dwords of L, converted,
// multiplied by D, less M (two roundings, as k4BlocksSSE2), stored at out.
#define YK4OUT(L, D, M, out) \
	VCVTDQ2PS L, L; \
	VMULPS D, L, L; \
	VSUBPS M, L, L; \
	VMOVUPS L, (out)(DI)

// YK4(in, out): elements out/4.. (low nibbles of the 8 bytes at in) and
// out/4+32.. (their high nibbles): each 8 bytes of qs zero-extended to
// dwords give eight low nibbles (masked) and the eight high ones (shifted).
#define YK4(in, out) \
	VPMOVZXBD in(SI), Y0; \
	VPSRLD $4, Y0, Y1; \
	VPAND  Y15, Y0, Y0; \
	YK4OUT(Y0, Y9, Y10, out); \
	YK4OUT(Y1, Y11, Y12, out+128)

// YKSCALES(j): sub-blocks 2j and 2j+1's d·sc and dmin·m in Y9..Y12.
#define YKSCALES(j) \
	VBROADCASTSS (16*j)(DX), Y9; \
	VBROADCASTSS (16*j+4)(DX), Y10; \
	VBROADCASTSS (16*j+8)(DX), Y11; \
	VBROADCASTSS (16*j+12)(DX), Y12

#define YK4SUB(j) \
	YKSCALES(j); \
	YK4(32*j, 256*j); \
	YK4(32*j+8, 256*j+32); \
	YK4(32*j+16, 256*j+64); \
	YK4(32*j+24, 256*j+96)

// YK5(in, hin, j, out): YK4 with bit 4 of each level from the qh bytes at
// hin: bit 2j of the byte for the low nibbles, bit 2j+1 for the high ones.
#define YK5(in, hin, j, out) \
	VPMOVZXBD in(SI), Y0; \
	VPMOVZXBD hin(BX), Y2; \
	VPSRLD $4, Y0, Y1; \
	VPAND  Y15, Y0, Y0; \
	VPSRLD $(2*j), Y2, Y2; \
	VPSLLD $4, Y2, Y3; \
	VPAND  Y14, Y3, Y3; \
	VPOR   Y3, Y0, Y0; \
	VPSLLD $3, Y2, Y3; \
	VPAND  Y14, Y3, Y3; \
	VPOR   Y3, Y1, Y1; \
	YK4OUT(Y0, Y9, Y10, out); \
	YK4OUT(Y1, Y11, Y12, out+128)

#define YK5SUB(j) \
	YKSCALES(j); \
	YK5(32*j, 0, j, 256*j); \
	YK5(32*j+8, 8, j, 256*j+32); \
	YK5(32*j+16, 16, j, 256*j+64); \
	YK5(32*j+24, 24, j, 256*j+96)

// func kBlocksAVX2(dst *float32, qs, qh *byte, stride int, dm *float32, n int)
// k4BlocksSSE2 (qh nil) or k5BlocksSSE2, eight elements per instruction.
TEXT ·kBlocksAVX2(SB), NOSPLIT, $0-48
	MOVQ   dst+0(FP), DI
	MOVQ   qs+8(FP), SI
	MOVQ   qh+16(FP), BX
	MOVQ   stride+24(FP), R8
	MOVQ   dm+32(FP), DX
	MOVQ   n+40(FP), CX
	TESTQ  CX, CX
	JLE    kydone
	YSPLAT($15, X15, Y15)
	YSPLAT($16, X14, Y14)
	TESTQ  BX, BX
	JZ     k4yblk

k5yblk:
	YK5SUB(0)
	YK5SUB(1)
	YK5SUB(2)
	YK5SUB(3)
	ADDQ   R8, SI
	ADDQ   R8, BX
	ADDQ   $64, DX
	ADDQ   $1024, DI
	DECQ   CX
	JNZ    k5yblk
	JMP    kyend

k4yblk:
	YK4SUB(0)
	YK4SUB(1)
	YK4SUB(2)
	YK4SUB(3)
	ADDQ   R8, SI
	ADDQ   $64, DX
	ADDQ   $1024, DI
	DECQ   CX
	JNZ    k4yblk

kyend:
	VZEROUPPER

kydone:
	RET

// Shift counts 0..31 in dwords: lane k of the vector at byte 4e counts e+k.
DATA lgcnt<>+0(SB)/8, $0x0000000100000000
DATA lgcnt<>+8(SB)/8, $0x0000000300000002
DATA lgcnt<>+16(SB)/8, $0x0000000500000004
DATA lgcnt<>+24(SB)/8, $0x0000000700000006
DATA lgcnt<>+32(SB)/8, $0x0000000900000008
DATA lgcnt<>+40(SB)/8, $0x0000000b0000000a
DATA lgcnt<>+48(SB)/8, $0x0000000d0000000c
DATA lgcnt<>+56(SB)/8, $0x0000000f0000000e
DATA lgcnt<>+64(SB)/8, $0x0000001100000010
DATA lgcnt<>+72(SB)/8, $0x0000001300000012
DATA lgcnt<>+80(SB)/8, $0x0000001500000014
DATA lgcnt<>+88(SB)/8, $0x0000001700000016
DATA lgcnt<>+96(SB)/8, $0x0000001900000018
DATA lgcnt<>+104(SB)/8, $0x0000001b0000001a
DATA lgcnt<>+112(SB)/8, $0x0000001d0000001c
DATA lgcnt<>+120(SB)/8, $0x0000001f0000001e
GLOBL lgcnt<>(SB), RODATA|NOPTR, $128

// LGHIGH(L, e): bit e+k of the qh word in Y8 as bit 4 of lane k of L.
#define LGHIGH(L, e) \
	VPSRLVD lgcnt<>+(4*e)(SB), Y8, Y9; \
	VPSLLD $4, Y9, Y9; \
	VPAND  Y14, Y9, Y9; \
	VPOR   Y9, L, L

// LGOUT(L, out): lane k of L less the offset, converted, times d, stored
// as element out/4+k.
#define LGOUT(L, out) \
	VPSUBD Y13, L, L; \
	VCVTDQ2PS L, L; \
	VMULPS Y7, L, L; \
	VMOVUPS L, (out)(DI)

// LGOUTM(L, out): LGOUT, plus m after the product (two roundings).
#define LGOUTM(L, out) \
	VPSUBD Y13, L, L; \
	VCVTDQ2PS L, L; \
	VMULPS Y7, L, L; \
	VADDPS Y6, L, L; \
	VMOVUPS L, (out)(DI)

// func legacyBlocksAVX2(dst *float32, qs, qh *byte, stride int, ds, ms *float32, n int, off int, flags int)
// n q4_0, q4_1, q5_0 or q5_1 blocks, stride bytes apart: the 16 bytes at qs
// hold element j's level in the low nibble of byte j and element j+16's in
// the high one; with flags&1, bit e of the little-endian word at qh is bit 4
// of element e's level. Element e of block i is
// float32(level - off)·ds[i], and with flags&2, that + ms[i].
TEXT ·legacyBlocksAVX2(SB), NOSPLIT, $0-72
	MOVQ   dst+0(FP), DI
	MOVQ   qs+8(FP), SI
	MOVQ   qh+16(FP), BX
	MOVQ   stride+24(FP), R8
	MOVQ   ds+32(FP), DX
	MOVQ   ms+40(FP), R9
	MOVQ   n+48(FP), CX
	MOVQ   off+56(FP), AX
	MOVQ   flags+64(FP), R10
	TESTQ  CX, CX
	JLE    lgdone
	VMOVD  AX, X13
	VPBROADCASTD X13, Y13
	YSPLAT($15, X15, Y15)
	YSPLAT($16, X14, Y14)

lgblk:
	VBROADCASTSS (DX), Y7
	VPMOVZXBD (SI), Y0
	VPMOVZXBD 8(SI), Y1
	VPSRLD $4, Y0, Y2
	VPSRLD $4, Y1, Y3
	VPAND  Y15, Y0, Y0
	VPAND  Y15, Y1, Y1
	TESTQ  $1, R10
	JZ     lgnoh
	VPBROADCASTD (BX), Y8
	LGHIGH(Y0, 0)
	LGHIGH(Y1, 8)
	LGHIGH(Y2, 16)
	LGHIGH(Y3, 24)

lgnoh:
	TESTQ  $2, R10
	JNZ    lgm
	LGOUT(Y0, 0)
	LGOUT(Y1, 32)
	LGOUT(Y2, 64)
	LGOUT(Y3, 96)
	JMP    lgnext

lgm:
	VBROADCASTSS (R9), Y6
	LGOUTM(Y0, 0)
	LGOUTM(Y1, 32)
	LGOUTM(Y2, 64)
	LGOUTM(Y3, 96)

lgnext:
	ADDQ   R8, SI
	ADDQ   R8, BX
	ADDQ   $4, DX
	ADDQ   $4, R9
	ADDQ   $128, DI
	DECQ   CX
	JNZ    lgblk
	VZEROUPPER

lgdone:
	RET
