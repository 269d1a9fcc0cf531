package server

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// The Service's workspace operations: the tenant's Caller bounds them, another
// tenant's workspace answers as an unknown one (the executor compares
// tenants), and every change is audited.

func (s *Service) caller(tenant string) (executor.Caller, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return executor.Caller{}, err
	}
	return t.caller, nil
}

// forwardRun has peer, the node that holds the run's workspace, run spec; the
// caller follows it through this node: the id peer gives the run, its output as
// it is written, its Result. Peer admits the run as its own (policy, limits,
// audit); a caller that leaves ends the forwarded request, and so the run.
func forwardRun(ctx context.Context, peer Peer, spec executor.Spec, f RunFollower) (executor.Result, error) {
	res, err := peer.Run(ctx, spec, f.Stdout, f.Stderr, f.Begin)
	if err != nil && isTransport(err) && ctx.Err() == nil {
		err = fmt.Errorf("%w: workspace %s is on another node, which was running the run and stopped answering: %v", api.ErrOnAnotherNode, spec.Workspace, err)
	}
	return res, err
}

// CreateWorkspace makes a workspace for the tenant.
func (s *Service) CreateWorkspace(ctx context.Context, tenant string, spec executor.WorkspaceSpec, via, remote string) (executor.Workspace, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return executor.Workspace{}, err
	}
	w, err := s.ex.CreateWorkspace(ctx, spec, c)
	if err == nil {
		if berr := s.member.bindWorkspace(ctx, w.ID, c.Tenant); berr != nil {
			s.ex.RemoveWorkspace(context.WithoutCancel(ctx), w.ID, c)
			w, err = executor.Workspace{}, berr
		}
	}
	ev := auditEvent{Event: "workspace.create", Tenant: tenant, Workspace: w.ID, Via: via, Remote: remote}
	if err != nil {
		ev.Error = err.Error()
	}
	s.write(ev)
	return w, err
}

// Workspace reports one of the tenant's workspaces.
func (s *Service) Workspace(ctx context.Context, tenant, id string) (executor.Workspace, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return executor.Workspace{}, err
	}
	if peer, err := s.member.holder(ctx, tenant, id); peer != nil || err != nil {
		if err != nil {
			return executor.Workspace{}, err
		}
		return peer.Workspace(ctx, id)
	}
	return s.ex.Workspace(ctx, id, c)
}

// Workspaces lists the tenant's workspaces.
func (s *Service) Workspaces(ctx context.Context, tenant string) ([]executor.Workspace, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return nil, err
	}
	list, err := s.ex.Workspaces(ctx, c)
	if err != nil {
		return nil, err
	}
	theirs, err := s.member.otherWorkspaces(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for _, w := range theirs {
		// Nodes that share one engine (as in the tests) see each other's.
		if !slices.ContainsFunc(list, func(x executor.Workspace) bool { return x.ID == w.ID }) {
			list = append(list, w)
		}
	}
	slices.SortFunc(list, func(a, b executor.Workspace) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return list, nil
}

// RemoveWorkspace deletes one of the tenant's workspaces.
func (s *Service) RemoveWorkspace(ctx context.Context, tenant, id, via, remote string) error {
	c, err := s.caller(tenant)
	if err != nil {
		return err
	}
	if peer, err := s.member.holder(ctx, tenant, id); peer != nil || err != nil {
		if err == nil {
			err = peer.RemoveWorkspace(ctx, id) // that node audits it and forgets it in the cluster
		}
		return err
	}
	err = s.ex.RemoveWorkspace(ctx, id, c)
	if err == nil {
		s.member.unbindWorkspace(ctx, id)
	}
	s.auditFile("workspace.delete", tenant, id, "", via, remote, err)
	return err
}

// PutFile writes one file into a workspace.
func (s *Service) PutFile(ctx context.Context, tenant, id, path string, mode fs.FileMode, content io.Reader, via, remote string) error {
	c, err := s.caller(tenant)
	if err != nil {
		return err
	}
	if peer, perr := s.member.holder(ctx, tenant, id); peer != nil || perr != nil {
		if perr != nil {
			return perr
		}
		return peer.PutFile(ctx, id, path, mode, content)
	}
	err = s.ex.PutFile(ctx, id, path, mode, content, c)
	s.auditFile("workspace.upload", tenant, id, path, via, remote, err)
	return err
}

// PutArchive extracts a tar(.gz) archive into a workspace directory.
func (s *Service) PutArchive(ctx context.Context, tenant, id, dir string, archive io.Reader, via, remote string) error {
	c, err := s.caller(tenant)
	if err != nil {
		return err
	}
	if peer, perr := s.member.holder(ctx, tenant, id); peer != nil || perr != nil {
		if perr != nil {
			return perr
		}
		return peer.PutArchive(ctx, id, dir, archive)
	}
	err = s.ex.PutArchive(ctx, id, dir, archive, c)
	s.auditFile("workspace.upload", tenant, id, dir, via, remote, err)
	return err
}

// RemoveFile deletes a file or directory of a workspace.
func (s *Service) RemoveFile(ctx context.Context, tenant, id, path, via, remote string) error {
	c, err := s.caller(tenant)
	if err != nil {
		return err
	}
	if peer, perr := s.member.holder(ctx, tenant, id); peer != nil || perr != nil {
		if perr != nil {
			return perr
		}
		return peer.RemoveFile(ctx, id, path)
	}
	err = s.ex.RemoveFile(ctx, id, path, c)
	s.auditFile("workspace.delete", tenant, id, path, via, remote, err)
	return err
}

// OpenFile reads one file of a workspace.
func (s *Service) OpenFile(ctx context.Context, tenant, id, path string) (io.ReadCloser, executor.FileInfo, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return nil, executor.FileInfo{}, err
	}
	if peer, err := s.member.holder(ctx, tenant, id); peer != nil || err != nil {
		if err != nil {
			return nil, executor.FileInfo{}, err
		}
		return peer.OpenFile(ctx, id, path)
	}
	return s.ex.OpenFile(ctx, id, path, c)
}

// OpenArchive reads a workspace directory as a tar archive.
func (s *Service) OpenArchive(ctx context.Context, tenant, id, dir string) (io.ReadCloser, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return nil, err
	}
	if peer, err := s.member.holder(ctx, tenant, id); peer != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return peer.OpenArchive(ctx, id, dir)
	}
	return s.ex.OpenArchive(ctx, id, dir, c)
}

// ListFiles lists a workspace directory.
func (s *Service) ListFiles(ctx context.Context, tenant, id, dir string) (executor.FileList, error) {
	c, err := s.caller(tenant)
	if err != nil {
		return executor.FileList{}, err
	}
	if peer, err := s.member.holder(ctx, tenant, id); peer != nil || err != nil {
		if err != nil {
			return executor.FileList{}, err
		}
		return peer.ListFiles(ctx, id, dir)
	}
	return s.ex.ListFiles(ctx, id, dir, c)
}

func (s *Service) auditFile(event, tenant, id, path, via, remote string, err error) {
	ev := auditEvent{Event: event, Tenant: tenant, Workspace: id, Path: path, Via: via, Remote: remote}
	if err != nil {
		ev.Error = err.Error()
	}
	s.write(ev)
}
