package policy

import "fmt"

// Level is how risky a command is: low, medium, high or critical. The
// zero Level is unset.
type Level int

// Levels, in increasing risk.
const (
	Low Level = iota + 1
	Medium
	High
	Critical
)

var levelNames = [...]string{"", "low", "medium", "high", "critical"}

func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

// raise is the next level up; critical stays critical.
func (l Level) raise() Level {
	if l < Critical {
		return l + 1
	}
	return l
}

// MarshalText writes the level's name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a level's name.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ParseLevel reads low, medium, high or critical.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if n != "" && n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("policy: level %q: want low, medium, high or critical", s)
}

// Action is what happens to a judged command: allow runs it, confirm
// waits for an operator's approval, deny refuses it. The zero Action is
// unset.
type Action int

// Actions, in increasing strictness.
const (
	Allow Action = iota + 1
	Confirm
	Deny
)

var actionNames = [...]string{"", "allow", "confirm", "deny"}

func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("action(%d)", int(a))
	}
	return actionNames[a]
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action's name.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// ParseAction reads allow, confirm or deny.
func ParseAction(s string) (Action, error) {
	for i, n := range actionNames {
		if n != "" && n == s {
			return Action(i), nil
		}
	}
	return 0, fmt.Errorf("policy: action %q: want allow, confirm or deny", s)
}
