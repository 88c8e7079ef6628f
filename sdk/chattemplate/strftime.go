package chattemplate

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t with the C/Python directives templates use
// (strftime_now("%d %b %Y") in Llama 3.1's template). Unknown directives are
// kept as written.
func strftime(t time.Time, format string) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			sb.WriteByte(c)
			continue
		}
		i++
		d := format[i]
		noPad := false
		if d == '-' && i+1 < len(format) { // glibc's "%-d": no padding
			noPad = true
			i++
			d = format[i]
		}
		num := func(v, width int) {
			if noPad {
				fmt.Fprintf(&sb, "%d", v)
			} else {
				fmt.Fprintf(&sb, "%0*d", width, v)
			}
		}
		switch d {
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'm':
			num(int(t.Month()), 2)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			fmt.Fprintf(&sb, "%d", t.Year())
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'j':
			num(t.YearDay(), 3)
		case 'w':
			fmt.Fprintf(&sb, "%d", int(t.Weekday()))
		case 'Z':
			name, _ := t.Zone()
			sb.WriteString(name)
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case 'F':
			sb.WriteString(t.Format("2006-01-02"))
		case 'T':
			sb.WriteString(t.Format("15:04:05"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			if noPad {
				sb.WriteByte('-')
			}
			sb.WriteByte(d)
		}
	}
	return sb.String()
}
