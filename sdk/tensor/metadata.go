package tensor

// Metadata is an ordered map of typed values. Order is kept because formats
// such as GGUF store keys in order and a byte-identical rewrite needs it.
// The zero Metadata is empty and ready to use.
type Metadata struct {
	keys  []string
	index map[string]int
	vals  []Value
}

// Len returns the number of keys.
func (m *Metadata) Len() int { return len(m.keys) }

// Keys returns the keys in order. The slice must not be modified.
func (m *Metadata) Keys() []string { return m.keys }

// Get returns the value of key.
func (m *Metadata) Get(key string) (Value, bool) {
	i, ok := m.index[key]
	if !ok {
		return Value{}, false
	}
	return m.vals[i], true
}

// Set sets key to v. A new key goes to the end; an existing key keeps its place.
func (m *Metadata) Set(key string, v Value) {
	if i, ok := m.index[key]; ok {
		m.vals[i] = v
		return
	}
	if m.index == nil {
		m.index = make(map[string]int)
	}
	m.index[key] = len(m.keys)
	m.keys = append(m.keys, key)
	m.vals = append(m.vals, v)
}

// Delete removes key, keeping the order of the others.
func (m *Metadata) Delete(key string) {
	i, ok := m.index[key]
	if !ok {
		return
	}
	m.keys = append(m.keys[:i:i], m.keys[i+1:]...)
	m.vals = append(m.vals[:i:i], m.vals[i+1:]...)
	delete(m.index, key)
	for j := i; j < len(m.keys); j++ {
		m.index[m.keys[j]] = j
	}
}

// All calls yield for each key in order, stopping when it returns false.
func (m *Metadata) All(yield func(key string, v Value) bool) {
	for i, k := range m.keys {
		if !yield(k, m.vals[i]) {
			return
		}
	}
}

// Clone returns a copy whose key list can change independently. Values are
// immutable and shared.
func (m *Metadata) Clone() Metadata {
	c := Metadata{
		keys:  append([]string(nil), m.keys...),
		vals:  append([]Value(nil), m.vals...),
		index: make(map[string]int, len(m.keys)),
	}
	for i, k := range c.keys {
		c.index[k] = i
	}
	return c
}

// Equal reports whether m and o hold the same keys, in the same order, with
// equal values.
func (m *Metadata) Equal(o *Metadata) bool {
	if len(m.keys) != len(o.keys) {
		return false
	}
	for i, k := range m.keys {
		if o.keys[i] != k || !m.vals[i].Equal(o.vals[i]) {
			return false
		}
	}
	return true
}

// String returns the string value of key, or "" when it is absent or not a string.
func (m *Metadata) String(key string) string {
	v, _ := m.Get(key)
	s, _ := v.Str()
	return s
}
