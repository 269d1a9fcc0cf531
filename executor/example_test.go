package executor_test

import (
	"context"
	"fmt"

	"github.com/airlock-sandbox/airlock/executor"
)

func ExampleExecutor_Run() {
	ex, err := executor.New()
	if err != nil {
		fmt.Println("no engine:", err)
		return
	}
	defer ex.Close()

	res, err := ex.Run(context.Background(), executor.Spec{
		Command: "echo hello; echo oops >&2; exit 3",
		Timeout: 10,
	})
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	fmt.Printf("state=%s exit=%d stdout=%q stderr=%q\n", res.State, res.ExitCode, res.Stdout, res.Stderr)
	// Output: state=completed exit=3 stdout="hello\n" stderr="oops\n"
}

func ExampleExecutor_Run_timeout() {
	ex, err := executor.New()
	if err != nil {
		fmt.Println("no engine:", err)
		return
	}
	defer ex.Close()

	res, _ := ex.Run(context.Background(), executor.Spec{Command: "echo started; sleep 60", Timeout: 1})
	fmt.Printf("state=%s exit=%d timed_out=%v stdout=%q\n", res.State, res.ExitCode, res.TimedOut, res.Stdout)
	// Output: state=timed_out exit=124 timed_out=true stdout="started\n"
}

// A caller's secret reaches the sandbox as a placeholder only; its hosts join
// the run's egress, and the run's proxy puts the value into requests to them.
func ExampleExecutor_Admit_secrets() {
	ex, err := executor.New()
	if err != nil {
		fmt.Println("no engine:", err)
		return
	}
	defer ex.Close()

	caller := executor.Caller{Tenant: "acme", Secrets: []executor.Secret{{
		Name: "API_TOKEN", Value: "s3cr3t", Hosts: []string{"api.example.com"}, Header: "Authorization: Bearer {value}",
	}}}
	a, err := ex.Admit(executor.Spec{Command: `echo "${API_TOKEN%-*}"`, Secrets: []string{"API_TOKEN"}, Timeout: 10}, caller)
	if err != nil {
		fmt.Println("admit:", err)
		return
	}
	res, err := ex.Execute(context.Background(), a)
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	fmt.Printf("egress=%v stdout=%q\n", a.Spec().Egress, res.Stdout)
	// Output: egress=[api.example.com] stdout="airlock-secret\n"
}
