package policy

// Check judges a shell command as `sh -c command` would run it.
func (p *Policy) Check(command string) Decision {
	panic("not implemented yet")
}

// CheckArgv judges an argv executed directly, without a shell.
func (p *Policy) CheckArgv(argv []string) Decision {
	panic("not implemented yet")
}

func commandName(s string) string { return s }

func cleanPath(s string) string { return s }
