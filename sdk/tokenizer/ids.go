package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ParseIDs reads token ids as people write them for Decode: a JSON array,
// "[128000, 9906]", or numbers separated by spaces, commas, tabs or
// newlines, "128000 9906". An id must fit an int32.
func ParseIDs(s string) ([]int32, error) {
	s = strings.TrimSpace(s)
	var ids []int32
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, fmt.Errorf("%q is not a JSON array of token ids: %v", s, err)
		}
		return ids, nil
	}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' }) {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}
