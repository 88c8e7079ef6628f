// Package bytesize parses and formats byte counts written for people:
// "4GB", "512MiB", "1.5 GB", "1000". Decimal units (kB, MB, GB, TB, PB) are
// powers of 1000 and binary units (KiB, MiB, GiB, TiB, PiB) powers of 1024,
// as in the SI and IEC standards and in Hugging Face's max_shard_size.
//
// It is for configuration values such as shard sizes; it does not deal with
// physical units of tensors.
package bytesize

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

var units = map[string]uint64{
	"":    1,
	"b":   1,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"pb":  1e15,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
	"pib": 1 << 50,
}

// Parse reads a size: a non-negative decimal number (digits with at most
// one point) followed by an optional unit, with optional space between them.
// Units are case-insensitive ("gb", "GiB", "kB"); "K", "M", "G", "T", "P"
// alone are not accepted, since they leave the base ambiguous. A fractional
// size must come to a whole number of bytes ("1.5KB" is 1500; "1.5B" is an
// error).
func Parse(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, unit := in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, kB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB)", s, in[i:])
	}
	if num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("size %q: expected a number followed by a unit, such as 4GB or 512MiB", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).SetUint64(mult)))
	if !r.IsInt() {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	n := r.Num()
	if !n.IsUint64() {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n.Uint64(), nil
}

// Format writes n with the largest binary unit that divides it exactly, or in
// bytes: 4294967296 → "4GiB", 1000 → "1000B".
func Format(n uint64) string {
	for _, u := range []struct {
		name string
		size uint64
	}{{"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatUint(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// Human writes n approximately for people, in decimal units with three
// significant digits: 4000000000 → "4.00 GB".
func Human(n uint64) string {
	if n < 1000 {
		return strconv.FormatUint(n, 10) + " B"
	}
	f := float64(n)
	e := min(int(math.Log10(f)/3), 5)
	v := f / math.Pow(1000, float64(e))
	if v >= 999.5 && e < 5 {
		e++
		v /= 1000
	}
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64) // three significant digits
	return strconv.FormatFloat(v, 'f', 2-int(math.Floor(math.Log10(v))), 64) + " " + []string{"B", "kB", "MB", "GB", "TB", "PB"}[e]
}
