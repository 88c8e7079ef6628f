package chattemplate

import "strings"

// gonja parses a conditional expression (X if C else Y) only as the whole of
// a {{ … }} or a {% set … %} value; anywhere else, for instance in
// parentheses ("'a' + (x if c else ”)", as Gemma 3's template has it) or a
// call argument, it fails with "Unbalanced parenthesis". rewriteConditionals
// rewrites each nested conditional into an equivalent expression gonja
// parses:
//
//	X if C else Y   →   ((C) and [X] or [Y])[0]
//
// which evaluates C once, then only the chosen branch, and yields its value
// even when that value is falsy (the one-element list is always truthy). A
// conditional without else yields undefined, as in Jinja.
//
// Conditionals at the top of {{ … }} and {% set … %} are left to gonja, and
// so is the filter of a for loop ({% for x in xs if x.ok %}). Anything the
// scanner does not understand is left unchanged for gonja to report.
func rewriteConditionals(src string) string {
	var out strings.Builder
	i := 0
	for i < len(src) {
		j := strings.Index(src[i:], "{")
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		j += i
		switch src[j+1] {
		case '#':
			end := strings.Index(src[j+2:], "#}")
			if end < 0 {
				out.WriteString(src[i:])
				return out.String()
			}
			end += j + 4
			out.WriteString(src[i:end])
			i = end
			continue
		case '{', '%':
		default:
			out.WriteString(src[i : j+1])
			i = j + 1
			continue
		}
		closer := "}}"
		if src[j+1] == '%' {
			closer = "%}"
		}
		start := j + 2
		if start < len(src) && (src[start] == '-' || src[start] == '+') {
			start++
		}
		toks, end, ok := lexTag(src, start, closer)
		if !ok {
			out.WriteString(src[i:])
			return out.String()
		}
		out.WriteString(src[i:start])
		body := src[start:end]
		if src[j+1] == '%' && isRawStart(toks) {
			// Copy everything up to {% endraw %} unchanged.
			k := indexEndRaw(src, end)
			if k < 0 {
				out.WriteString(src[start:])
				return out.String()
			}
			out.WriteString(src[start:k])
			i = k
			continue
		}
		out.WriteString(rewriteTag(body, toks, src[j+1] == '%'))
		i = end
	}
	out.WriteString(src[i:])
	return out.String()
}

type tokKind int

const (
	tokSpace tokKind = iota
	tokString
	tokName
	tokOther
)

type token struct {
	kind tokKind
	text string
}

// lexTag reads the expression tokens of a tag from src[start:] up to the
// closer (with an optional - or + before it) at bracket depth 0. It returns
// the tokens and the offset where the closer (or its - or +) begins.
func lexTag(src string, start int, closer string) ([]token, int, bool) {
	var toks []token
	depth := 0
	i := start
	for i < len(src) {
		c := src[i]
		if depth == 0 {
			if strings.HasPrefix(src[i:], closer) {
				return toks, i, true
			}
			if (c == '-' || c == '+') && strings.HasPrefix(src[i+1:], closer) {
				return toks, i, true
			}
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			k := i
			for k < len(src) && (src[k] == ' ' || src[k] == '\t' || src[k] == '\n' || src[k] == '\r') {
				k++
			}
			toks = append(toks, token{tokSpace, src[i:k]})
			i = k
		case c == '\'' || c == '"':
			k := i + 1
			for k < len(src) && src[k] != c {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(src) {
				return nil, 0, false
			}
			toks = append(toks, token{tokString, src[i : k+1]})
			i = k + 1
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
			k := i
			for k < len(src) && (src[k] == '_' || (src[k] >= 'a' && src[k] <= 'z') || (src[k] >= 'A' && src[k] <= 'Z') || (src[k] >= '0' && src[k] <= '9')) {
				k++
			}
			toks = append(toks, token{tokName, src[i:k]})
			i = k
		default:
			n := 1
			for _, op := range []string{"==", "!=", "<=", ">=", "**", "//"} {
				if strings.HasPrefix(src[i:], op) {
					n = 2
				}
			}
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth == 0 {
					return nil, 0, false
				}
				depth--
			}
			toks = append(toks, token{tokOther, src[i : i+n]})
			i += n
		}
	}
	return nil, 0, false
}

func isRawStart(toks []token) bool {
	for _, t := range toks {
		if t.kind == tokSpace {
			continue
		}
		return t.kind == tokName && t.text == "raw"
	}
	return false
}

// indexEndRaw finds the {% endraw %} tag after offset i.
func indexEndRaw(src string, i int) int {
	for {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return -1
		}
		k += i
		rest := strings.TrimLeft(src[k+2:], "-+ \t\r\n")
		if strings.HasPrefix(rest, "endraw") {
			return k
		}
		i = k + 2
	}
}

// rewriteTag rewrites the conditionals of one tag body: everywhere in an
// output tag, in the condition of {% if %} and {% elif %}, in the value of
// {% set %}, and inside brackets elsewhere (a for loop's own "if" is a
// filter, not a conditional).
func rewriteTag(body string, toks []token, statement bool) string {
	if !hasName(toks, "if") {
		return body
	}
	if !statement {
		return rewriteSlots(toks, true)
	}
	k := 0
	for k < len(toks) && toks[k].kind == tokSpace {
		k++
	}
	switch firstName(toks) {
	case "if", "elif":
		return joinTokens(toks[:k+1]) + rewriteSlots(toks[k+1:], true)
	case "set":
		depth := 0
		for e := k; e < len(toks); e++ {
			t := toks[e]
			if t.kind != tokOther {
				continue
			}
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			case "=":
				if depth == 0 {
					return rewriteGroups(toks[:e]) + "=" + rewriteConditional(toks[e+1:])
				}
			}
		}
	}
	return rewriteSlots(toks, false)
}

func hasName(toks []token, name string) bool {
	for _, t := range toks {
		if t.kind == tokName && t.text == name {
			return true
		}
	}
	return false
}

func firstName(toks []token) string {
	for _, t := range toks {
		if t.kind != tokSpace {
			if t.kind == tokName {
				return t.text
			}
			return ""
		}
	}
	return ""
}

func joinTokens(toks []token) string {
	var sb strings.Builder
	for _, t := range toks {
		sb.WriteString(t.text)
	}
	return sb.String()
}

// rewriteSlots rewrites a token sequence at one bracket level: nested
// groups always, and the conditional of each slot (the parts between , : and
// = at this level) when rewriteHere is set.
func rewriteSlots(toks []token, rewriteHere bool) string {
	var sb strings.Builder
	slotStart := 0
	flush := func(end int) {
		slot := toks[slotStart:end]
		if rewriteHere {
			sb.WriteString(rewriteConditional(slot))
		} else {
			sb.WriteString(rewriteGroups(slot))
		}
	}
	depth := 0
	for k, t := range toks {
		if t.kind != tokOther {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",", ":", "=":
			if depth == 0 {
				flush(k)
				sb.WriteString(t.text)
				slotStart = k + 1
			}
		}
	}
	flush(len(toks))
	return sb.String()
}

// rewriteGroups rewrites every bracketed group inside toks, leaving this
// level as it is.
func rewriteGroups(toks []token) string {
	var sb strings.Builder
	for k := 0; k < len(toks); k++ {
		t := toks[k]
		if t.kind == tokOther && (t.text == "(" || t.text == "[" || t.text == "{") {
			end := matchClose(toks, k)
			sb.WriteString(t.text)
			sb.WriteString(rewriteSlots(toks[k+1:end], true))
			sb.WriteString(toks[end].text)
			k = end
			continue
		}
		sb.WriteString(t.text)
	}
	return sb.String()
}

func matchClose(toks []token, open int) int {
	depth := 0
	for k := open; k < len(toks); k++ {
		if toks[k].kind != tokOther {
			continue
		}
		switch toks[k].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return len(toks) - 1 // unreachable: lexTag balanced the brackets
}

// rewriteConditional rewrites one slot "X if C else Y" (Y may itself be a
// conditional), after rewriting the groups inside it.
func rewriteConditional(slot []token) string {
	ifAt, elseAt := -1, -1
	depth := 0
	for k, t := range slot {
		if t.kind == tokOther {
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
			continue
		}
		if depth != 0 || t.kind != tokName {
			continue
		}
		if t.text == "if" && ifAt < 0 {
			ifAt = k
		} else if t.text == "else" && ifAt >= 0 && elseAt < 0 {
			elseAt = k
		}
	}
	if ifAt < 0 || isBlank(slot[:ifAt]) {
		return rewriteGroups(slot)
	}
	lead, x := splitLeadingSpace(slot[:ifAt])
	var c, y string
	if elseAt >= 0 {
		c = rewriteGroups(slot[ifAt+1 : elseAt])
		y = rewriteConditional(slot[elseAt+1:])
	} else {
		c = rewriteGroups(slot[ifAt+1:])
		y = " __chattemplate_undefined__ "
	}
	ySpace, yExpr := splitTrailingSpace(y)
	return lead + "((" + strings.TrimSpace(c) + ") and [" + strings.TrimSpace(rewriteGroups(x)) + "] or [" + strings.TrimSpace(yExpr) + "])[0]" + ySpace
}

func isBlank(toks []token) bool {
	for _, t := range toks {
		if t.kind != tokSpace {
			return false
		}
	}
	return true
}

func splitLeadingSpace(toks []token) (string, []token) {
	k := 0
	for k < len(toks) && toks[k].kind == tokSpace {
		k++
	}
	return joinTokens(toks[:k]), toks[k:]
}

func splitTrailingSpace(s string) (space, rest string) {
	t := strings.TrimRight(s, " \t\r\n")
	return s[len(t):], t
}
