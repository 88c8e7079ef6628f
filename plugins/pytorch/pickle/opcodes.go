package pickle

import "fmt"

// Pickle opcodes, as Python's pickletools names them.
const (
	opMark            = '('
	opStop            = '.'
	opPop             = '0'
	opPopMark         = '1'
	opDup             = '2'
	opFloat           = 'F'
	opInt             = 'I'
	opBinInt          = 'J'
	opBinInt1         = 'K'
	opLong            = 'L'
	opBinInt2         = 'M'
	opNone            = 'N'
	opPersID          = 'P'
	opBinPersID       = 'Q'
	opReduce          = 'R'
	opString          = 'S'
	opBinString       = 'T'
	opShortBinString  = 'U'
	opUnicode         = 'V'
	opBinUnicode      = 'X'
	opAppend          = 'a'
	opBuild           = 'b'
	opGlobal          = 'c'
	opDict            = 'd'
	opEmptyDict       = '}'
	opAppends         = 'e'
	opGet             = 'g'
	opBinGet          = 'h'
	opInst            = 'i'
	opLongBinGet      = 'j'
	opList            = 'l'
	opEmptyList       = ']'
	opObj             = 'o'
	opPut             = 'p'
	opBinPut          = 'q'
	opLongBinPut      = 'r'
	opSetItem         = 's'
	opTuple           = 't'
	opEmptyTuple      = ')'
	opSetItems        = 'u'
	opBinFloat        = 'G'
	opProto           = 0x80
	opNewObj          = 0x81
	opExt1            = 0x82
	opExt2            = 0x83
	opExt4            = 0x84
	opTuple1          = 0x85
	opTuple2          = 0x86
	opTuple3          = 0x87
	opNewTrue         = 0x88
	opNewFalse        = 0x89
	opLong1           = 0x8a
	opLong4           = 0x8b
	opBinBytes        = 'B'
	opShortBinBytes   = 'C'
	opShortBinUnicode = 0x8c
	opBinUnicode8     = 0x8d
	opBinBytes8       = 0x8e
	opEmptySet        = 0x8f
	opAddItems        = 0x90
	opFrozenSet       = 0x91
	opNewObjEx        = 0x92
	opStackGlobal     = 0x93
	opMemoize         = 0x94
	opFrame           = 0x95
	opByteArray8      = 0x96
	opNextBuffer      = 0x97
	opReadonlyBuffer  = 0x98
)

var opNames = map[byte]string{
	opMark: "MARK", opStop: "STOP", opPop: "POP", opPopMark: "POP_MARK", opDup: "DUP",
	opFloat: "FLOAT", opInt: "INT", opBinInt: "BININT", opBinInt1: "BININT1", opLong: "LONG",
	opBinInt2: "BININT2", opNone: "NONE", opPersID: "PERSID", opBinPersID: "BINPERSID",
	opReduce: "REDUCE", opString: "STRING", opBinString: "BINSTRING",
	opShortBinString: "SHORT_BINSTRING", opUnicode: "UNICODE", opBinUnicode: "BINUNICODE",
	opAppend: "APPEND", opBuild: "BUILD", opGlobal: "GLOBAL", opDict: "DICT",
	opEmptyDict: "EMPTY_DICT", opAppends: "APPENDS", opGet: "GET", opBinGet: "BINGET",
	opInst: "INST", opLongBinGet: "LONG_BINGET", opList: "LIST", opEmptyList: "EMPTY_LIST",
	opObj: "OBJ", opPut: "PUT", opBinPut: "BINPUT", opLongBinPut: "LONG_BINPUT",
	opSetItem: "SETITEM", opTuple: "TUPLE", opEmptyTuple: "EMPTY_TUPLE", opSetItems: "SETITEMS",
	opBinFloat: "BINFLOAT", opProto: "PROTO", opNewObj: "NEWOBJ", opExt1: "EXT1",
	opExt2: "EXT2", opExt4: "EXT4", opTuple1: "TUPLE1", opTuple2: "TUPLE2", opTuple3: "TUPLE3",
	opNewTrue: "NEWTRUE", opNewFalse: "NEWFALSE", opLong1: "LONG1", opLong4: "LONG4",
	opBinBytes: "BINBYTES", opShortBinBytes: "SHORT_BINBYTES",
	opShortBinUnicode: "SHORT_BINUNICODE", opBinUnicode8: "BINUNICODE8",
	opBinBytes8: "BINBYTES8", opEmptySet: "EMPTY_SET", opAddItems: "ADDITEMS",
	opFrozenSet: "FROZENSET", opNewObjEx: "NEWOBJ_EX", opStackGlobal: "STACK_GLOBAL",
	opMemoize: "MEMOIZE", opFrame: "FRAME", opByteArray8: "BYTEARRAY8",
	opNextBuffer: "NEXT_BUFFER", opReadonlyBuffer: "READONLY_BUFFER",
}

func opName(code byte) string {
	if n, ok := opNames[code]; ok {
		return n
	}
	return fmt.Sprintf("0x%02x", code)
}
