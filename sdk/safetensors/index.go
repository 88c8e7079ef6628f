package safetensors

import (
	"bytes"
	"unicode/utf8"
)

// IndexWeightMap returns the weight map (tensor name → shard file name) of
// a sharded checkpoint's index (model.safetensors.index.json) written the
// way Hugging Face writes it: an object of exactly the members "metadata",
// an object of strings and integers, and "weight_map", an object of
// strings, with no escapes and no name twice. encoding/json takes about
// 1.7 µs an entry to read that map; this takes a tenth.
//
// It returns ok = false for anything else, valid or not, and the caller
// then reads the index with encoding/json, whose errors say what is wrong.
// What it accepts, encoding/json reads to the same map
// (FuzzIndexWeightMapAgreesWithJSON).
func IndexWeightMap(raw []byte) (weightMap map[string]string, ok bool) {
	if !utf8.Valid(raw) {
		return nil, false // encoding/json would replace the invalid bytes
	}
	p := canonicalParser{b: raw}
	p.space()
	if !p.eat('{') {
		return nil, false
	}
	p.space()
	var seenMetadata bool
	for {
		key, ok := p.strBytes()
		if !ok || !p.colon() {
			return nil, false
		}
		switch {
		case string(key) == "metadata" && !seenMetadata:
			seenMetadata = true
			if !p.scalarObject() {
				return nil, false
			}
		case string(key) == "weight_map" && weightMap == nil:
			// Each member has four quotes; the hint is capped, and the map
			// grows past it, so that a file of quotes cannot make it
			// allocate much.
			hint := min(bytes.Count(raw[p.i:], []byte{'"'})/4, 1<<18)
			if weightMap, ok = p.stringObject(hint); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
		if !p.next('}') {
			if p.err {
				return nil, false
			}
			break
		}
	}
	p.space()
	if p.err || p.i != len(raw) || weightMap == nil {
		return nil, false
	}
	return weightMap, true
}

// scalarObject takes an object whose values are strings or integers.
func (p *canonicalParser) scalarObject() bool {
	if !p.eat('{') {
		return false
	}
	p.space()
	if p.eat('}') {
		return true
	}
	for {
		if _, ok := p.strBytes(); !ok || !p.colon() {
			return false
		}
		if p.i < len(p.b) && p.b[p.i] == '"' {
			if _, ok := p.strBytes(); !ok {
				return false
			}
		} else if _, ok := p.uint(); !ok {
			return false
		}
		if !p.next('}') {
			return !p.err
		}
	}
}

// stringObject takes an object of strings with no name twice (a header's
// __metadata__, an index's weight_map) into a map sized for hint members.
// Runs of the same value (a shard's tensors) share one string.
func (p *canonicalParser) stringObject(hint int) (map[string]string, bool) {
	if !p.eat('{') {
		return nil, false
	}
	m := make(map[string]string, hint)
	p.space()
	if p.eat('}') {
		return m, true
	}
	var last string
	for {
		name, ok := p.str()
		if !ok || !p.colon() {
			return nil, false
		}
		if _, dup := m[name]; dup {
			return nil, false // encoding/json would keep the last
		}
		value, ok := p.strBytes()
		if !ok {
			return nil, false
		}
		if string(value) != last {
			last = string(value)
		}
		m[name] = last
		if !p.next('}') {
			return m, !p.err
		}
	}
}
