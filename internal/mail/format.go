package mail

import (
	"fmt"
	"strconv"
	"strings"

	"verdict/internal/domain"
)

// Currencies whose minor unit is not a hundredth; payment providers report amounts in the
// minor unit, so 500 JPY arrives as 500 and 1.500 KWD as 1500.
var (
	zeroDecimal  = setOf("BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF")
	threeDecimal = setOf("BHD", "JOD", "KWD", "OMR", "TND")
)

func setOf(codes ...string) map[string]bool {
	m := make(map[string]bool, len(codes))
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// FormatMoney formats an amount in the currency's minor unit, e.g. (9900, "usd") → "99.00 USD".
func FormatMoney(minor int64, currency string) string {
	cur := strings.ToUpper(currency)
	decimals := CurrencyDecimals(cur)
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	s := strconv.FormatInt(minor, 10)
	if decimals > 0 {
		if len(s) <= decimals {
			s = strings.Repeat("0", decimals-len(s)+1) + s
		}
		s = group(s[:len(s)-decimals]) + "." + s[len(s)-decimals:]
	} else {
		s = group(s)
	}
	return strings.TrimSpace(sign + s + " " + cur)
}

// CurrencyDecimals is how many decimals a currency's minor unit has (2 for most, 0 for JPY).
func CurrencyDecimals(currency string) int {
	cur := strings.ToUpper(currency)
	switch {
	case zeroDecimal[cur]:
		return 0
	case threeDecimal[cur]:
		return 3
	}
	return 2
}

// formatCount shows a limit or usage figure: "unlimited", "1,000" or, for bytes, "1.5 GiB".
func formatCount(n int64, bytes bool) string {
	if n == domain.Unlimited {
		return "unlimited"
	}
	if !bytes {
		if n < 0 {
			return "-" + group(strconv.FormatInt(-n, 10))
		}
		return group(strconv.FormatInt(n, 10))
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}

// group inserts thousands separators into a string of digits.
func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}
