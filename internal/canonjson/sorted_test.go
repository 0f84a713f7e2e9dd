package canonjson

import "testing"

func TestSorted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b": 1, "a": {"d": [1, 2.50], "c": null}}`, `{"a":{"c":null,"d":[1,2.50]},"b":1}`},
		{` `, `null`},
		{`"x"`, `"x"`},
		{`12345678901234567890`, `12345678901234567890`},
	} {
		got, err := Sorted([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Sorted(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{`, `{} {}`, `{"a":}`} {
		if _, err := Sorted([]byte(bad)); err == nil {
			t.Errorf("Sorted(%s): no error", bad)
		}
	}
}
