package pipeline

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the functions pipeline expressions may call: go-cty's
// standard library, try/can, and a few path helpers. There are no network
// or environment functions, so a pipeline means the same thing everywhere.
func functions(root string) map[string]function.Function {
	resolve := func(p string) string {
		if filepath.IsAbs(p) || root == "" {
			return p
		}
		return filepath.Join(root, p)
	}
	return map[string]function.Function{
		"abs":        stdlib.AbsoluteFunc,
		"ceil":       stdlib.CeilFunc,
		"floor":      stdlib.FloorFunc,
		"max":        stdlib.MaxFunc,
		"min":        stdlib.MinFunc,
		"pow":        stdlib.PowFunc,
		"parseint":   stdlib.ParseIntFunc,
		"format":     stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc,
		"join":       stdlib.JoinFunc,
		"split":      stdlib.SplitFunc,
		"lower":      stdlib.LowerFunc,
		"upper":      stdlib.UpperFunc,
		"replace":    stdlib.ReplaceFunc,
		"regex":      stdlib.RegexFunc,
		"regexall":   stdlib.RegexAllFunc,
		"substr":     stdlib.SubstrFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"strlen":     stdlib.StrlenFunc,
		"length":     stdlib.LengthFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"distinct":   stdlib.DistinctFunc,
		"flatten":    stdlib.FlattenFunc,
		"keys":       stdlib.KeysFunc,
		"values":     stdlib.ValuesFunc,
		"lookup":     stdlib.LookupFunc,
		"merge":      stdlib.MergeFunc,
		"range":      stdlib.RangeFunc,
		"reverse":    stdlib.ReverseListFunc,
		"sort":       stdlib.SortFunc,
		"element":    stdlib.ElementFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"tostring":   stdlib.MakeToFunc(cty.String),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"try":        tryfunc.TryFunc,
		"can":        tryfunc.CanFunc,
		"basename":   pathFunc(func(p string) string { return filepath.Base(p) }),
		"dirname":    pathFunc(func(p string) string { return filepath.Dir(p) }),
		"abspath": pathFunc(func(p string) string {
			a, err := filepath.Abs(resolve(p))
			if err != nil {
				return resolve(p)
			}
			return a
		}),
		"fileexists": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				fi, err := os.Stat(resolve(args[0].AsString()))
				return cty.BoolVal(err == nil && !fi.IsDir()), nil
			},
		}),
		"direxists": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				fi, err := os.Stat(resolve(args[0].AsString()))
				return cty.BoolVal(err == nil && fi.IsDir()), nil
			},
		}),
	}
}

func pathFunc(f func(string) string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(f(args[0].AsString())), nil
		},
	})
}
