package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Schema describes the attributes of a source or sink block. The core decodes
// the block against it (HCL, with the pipeline's variables), so a typo or a
// wrong type is reported at its line before a plugin runs, and sends the
// plugin constant values as JSON.
type Schema struct {
	Attributes []Attribute
}

// Attribute is one configuration attribute.
type Attribute struct {
	Name string
	// Type is an HCL type constraint: "string", "number", "bool",
	// "list(string)", "map(string)", "any".
	Type      string
	Required  bool
	Sensitive bool // never shown in plans, logs or errors
	Doc       string
}

// Attribute returns the attribute called name.
func (s *Schema) Attribute(name string) (*Attribute, bool) {
	for i := range s.Attributes {
		if s.Attributes[i].Name == name {
			return &s.Attributes[i], true
		}
	}
	return nil, false
}

// Names returns the attribute names, sorted.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Attributes))
	for i, a := range s.Attributes {
		out[i] = a.Name
	}
	sort.Strings(out)
	return out
}

// SchemaOf derives a schema from the exported fields of struct type C that
// carry an `hcl:"name"` tag. Tag options: "optional" (otherwise required) and
// "sensitive". A `doc:"…"` tag gives the description. Go types map to HCL
// types: string, bool, numbers, slices (list), map[string]T (map), pointers
// (their element, optional), and any or json.RawMessage ("any").
func SchemaOf[C any]() (*Schema, error) {
	t := reflect.TypeFor[C]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("plugin config type %s is not a struct", t)
	}
	s := &Schema{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || !f.IsExported() {
			continue
		}
		parts := strings.Split(tag, ",")
		a := Attribute{Name: parts[0], Required: true, Doc: f.Tag.Get("doc")}
		for _, opt := range parts[1:] {
			switch opt {
			case "optional":
				a.Required = false
			case "sensitive":
				a.Sensitive = true
			default:
				return nil, fmt.Errorf("plugin config %s.%s: unknown hcl tag option %q", t, f.Name, opt)
			}
		}
		typ, err := hclType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("plugin config %s.%s: %w", t, f.Name, err)
		}
		if f.Type.Kind() == reflect.Pointer {
			a.Required = false
		}
		a.Type = typ
		s.Attributes = append(s.Attributes, a)
	}
	return s, nil
}

// MustSchemaOf is SchemaOf for package-level declarations; it panics on a
// malformed config type.
func MustSchemaOf[C any]() *Schema {
	s, err := SchemaOf[C]()
	if err != nil {
		panic(err)
	}
	return s
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func hclType(t reflect.Type) (string, error) {
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return "any", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return hclType(t.Elem())
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number", nil
	case reflect.Slice:
		e, err := hclType(t.Elem())
		if err != nil {
			return "", err
		}
		return "list(" + e + ")", nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("map keys must be strings, not %s", t.Key())
		}
		e, err := hclType(t.Elem())
		if err != nil {
			return "", err
		}
		return "map(" + e + ")", nil
	}
	return "", fmt.Errorf("type %s has no HCL equivalent", t)
}

// Config is a block's configuration as constant values: a JSON object with
// one member per attribute that was set.
type Config struct {
	// JSON is the encoded object. Absent attributes are missing or null.
	JSON []byte
}

// ConfigFrom builds a Config from a Go map, for callers that build a
// configuration by hand (the CLI's convert, tests).
func ConfigFrom(values map[string]any) (Config, error) {
	b, err := json.Marshal(values)
	if err != nil {
		return Config{}, fmt.Errorf("encoding plugin config: %w", err)
	}
	return Config{JSON: b}, nil
}

// MustConfig is ConfigFrom for tests and literals; it panics on values JSON
// cannot encode.
func MustConfig(values map[string]any) Config {
	c, err := ConfigFrom(values)
	if err != nil {
		panic(err)
	}
	return c
}

// Decode stores the configuration in the struct v points to, matching
// attributes to fields by their hcl tags. An attribute the struct does not
// declare is an error that names it.
func (c Config) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("plugin config: Decode needs a pointer to a struct, got %T", v)
	}
	var members map[string]json.RawMessage
	if len(bytes.TrimSpace(c.JSON)) > 0 {
		if err := json.Unmarshal(c.JSON, &members); err != nil {
			return &ConfigError{Msg: fmt.Sprintf("configuration is not a JSON object: %v", err)}
		}
	}
	rv = rv.Elem()
	t := rv.Type()
	known := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || !f.IsExported() {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		known[name] = true
		raw, ok := members[name]
		if !ok || string(raw) == "null" {
			required := f.Type.Kind() != reflect.Pointer
			for _, o := range parts[1:] {
				if o == "optional" {
					required = false
				}
			}
			if required {
				return &ConfigError{Attribute: name, Msg: "the attribute is required"}
			}
			continue
		}
		if err := json.Unmarshal(raw, rv.Field(i).Addr().Interface()); err != nil {
			return &ConfigError{Attribute: name, Msg: fmt.Sprintf("wrong type for %s: %v", f.Type, err)}
		}
	}
	for name := range members {
		if !known[name] {
			return &ConfigError{Attribute: name, Msg: "unknown attribute"}
		}
	}
	return nil
}
