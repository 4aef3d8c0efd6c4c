package redact

import "strings"

// mysqlAddrs open the address of a go-sql-driver/mysql DSN
// (user:password@tcp(host:3306)/db), the one DSN form with neither a URL
// host nor a password= keyword.
var mysqlAddrs = []string{"@tcp(", "@tcp6(", "@unix("}

func hasMySQLDSN(s string) bool {
	for _, a := range mysqlAddrs {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

// mysqlPassword masks the password of every MySQL DSN in s: what follows
// the first ':' of the user info up to the '@' that opens the address. The
// user info starts after white space, a quote, '=' or a scheme's "://".
func mysqlPassword(s string) string {
	for _, a := range mysqlAddrs {
		from := 0
		for {
			j := strings.Index(s[from:], a)
			if j < 0 {
				break
			}
			at := from + j
			start := at
			for start > 0 && !strings.ContainsRune(" \t\n\"'`=<", rune(s[start-1])) {
				start--
			}
			if k := strings.LastIndex(s[start:at], "://"); k >= 0 {
				start += k + 3
			}
			if c := strings.IndexByte(s[start:at], ':'); c >= 0 && s[start+c+1:at] != Mask {
				s = s[:start+c+1] + Mask + s[at:]
				at = start + c + 1 + len(Mask)
			}
			from = at + len(a)
		}
	}
	return s
}
