package main

import "flag"

// parseInterspersed parses args with fs, flags before, between and after
// the positional arguments (lakestream sql "SELECT 1" --format csv), which
// the flag package alone stops reading at the first positional argument.
// "--" ends the flags: what follows is positional. It returns the
// positional arguments in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
