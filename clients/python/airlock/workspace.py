"""Workspaces: the user's files, kept across runs, mounted at /workspace."""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import tarfile
import urllib.parse
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Union

from .errors import Conflict, RefusedPath
from .types import FileInfo, FileList, WorkspaceInfo, from_json

if TYPE_CHECKING:
    from .client import Client

_BLOCK = 512
_READ = 1 << 16


# Where a workspace is mounted in a sandbox: an absolute path under it names
# the same file as the path relative to it.
MOUNT = "/workspace"


def _route(kind: str, id: str, path: str) -> str:
    """_route is the route of path (as _path made it) in the workspace; each
    segment is escaped."""
    segs = [urllib.parse.quote(s, safe="") for s in path.split("/")] if path else [""]
    return "/v1/workspaces/%s/%s/%s" % (urllib.parse.quote(id, safe=""), kind, "/".join(segs))


def _path(path: Any, arg: str) -> str:
    """_path is path, the argument named arg, as the API takes it: relative to
    /workspace, "" for its root. A path relative to /workspace is that path;
    an absolute one under /workspace ("/workspace/src/x.py") names the same
    file; "." and empty segments are dropped. Any other absolute path, and
    any "..", is refused here, naming the argument: a path never climbs out,
    and the client does not guess what one that tries would mean."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise RefusedPath("%s: want a path in the workspace (str), not %r" % (arg, path), code="refused_path",
                          field=arg)
    p = path.replace(os.sep, "/") if os.sep != "/" else path
    if p.startswith("/"):
        if p != MOUNT and not p.startswith(MOUNT + "/"):
            raise RefusedPath("%s: %r is absolute and outside %s; give a path relative to %s, or one under it"
                              % (arg, path, MOUNT, MOUNT), code="refused_path", field=arg)
        p = p[len(MOUNT):]
    segs = [s for s in p.split("/") if s not in ("", ".")]
    if ".." in segs:
        raise RefusedPath("%s: %r has a \"..\" segment; workspace paths may not climb" % (arg, path),
                          code="refused_path", field=arg)
    return "/".join(segs)


class Workspace:
    """Workspace is a workspace of the client's tenant: id names it in
    run(workspace=ws) and start(workspace=ws), info is what the server last
    said of it. Paths are relative to /workspace, or absolute under it; any
    other absolute path, and any "..", is refused (RefusedPath, a ValueError,
    naming the argument) before a request is sent. As a context manager it is
    deleted when the block ends, unless keep is true."""

    def __init__(self, client: "Client", info: Optional[WorkspaceInfo], *, keep: bool = False,
                 id: Optional[str] = None):
        self.client = client
        self.info = info or WorkspaceInfo(id=id or "")
        self.id = self.info.id
        self.keep = keep

    def __repr__(self) -> str:
        return "airlock.Workspace(%r)" % self.id

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.keep:
            return
        try:
            self.delete()
        except Exception:
            if exc_type is None:  # never hide the error that ended the block
                raise

    def refresh(self) -> WorkspaceInfo:
        """refresh reads the workspace, with what its files take now and how
        many runs use it."""
        self.info = from_json(WorkspaceInfo, self.client._call("GET", "/v1/workspaces/" + urllib.parse.quote(self.id, safe="")))
        return self.info

    def delete(self) -> None:
        """delete deletes the workspace and its files (Conflict while a run or
        job uses it)."""
        self.client._call("DELETE", "/v1/workspaces/" + urllib.parse.quote(self.id, safe=""))

    def put(self, path: str, data: Union[bytes, str], mode: Optional[int] = None) -> None:
        """put writes data (str is written as UTF-8) to the file at path,
        creating its directories; mode is its permission bits (0o644 when None).
        path is relative to /workspace, or absolute under it ("/workspace/x"
        is "x"); another absolute path or a ".." is a RefusedPath (a
        ValueError) naming path, as for every path argument here."""
        p = _path(path, "path")
        if not p:
            raise RefusedPath("path: %r names the workspace's root, not a file" % path, code="refused_path",
                              field="path")
        if isinstance(data, str):
            data = data.encode("utf-8")
        q = [("mode", "%04o" % (mode & 0o777))] if mode else None
        r = self.client._t.request("PUT", _route("files", self.id, p), query=q, body=bytes(data),
                                   content_type="application/octet-stream",
                                   deadline=self.client._deadline())
        r.close()

    def upload(self, local_dir: str, to: str = ".") -> None:
        """upload copies the local directory local_dir into the workspace at
        to, as a tar archive made while it is sent: directories, regular files,
        and symbolic links as links (never followed); fifos, sockets and
        devices are left out. The server checks the archive whole before a byte
        lands: a link leading out, say, refuses all of it with RefusedPath
        naming the entry."""
        dest = _path(to, "to")
        if not os.path.isdir(local_dir):
            raise NotADirectoryError(errno.ENOTDIR, "upload: not a directory", local_dir)
        r = self.client._t.request("PUT", _route("archive", self.id, dest),
                                   body=_tar_stream(local_dir), content_type="application/x-tar",
                                   deadline=self.client._deadline())
        r.close()

    def read(self, path: str) -> bytes:
        """read returns the bytes of the regular file at path."""
        r = self.client._t.request("GET", _route("files", self.id, _path(path, "path")),
                                   accept="application/octet-stream", deadline=self.client._deadline())
        with r:
            if (r.headers.get("Content-Type") or "").startswith("application/json"):
                raise Conflict("%r is a directory; ls it, or download it" % path, code="wrong_type",
                               field="path", status=409)
            return r.read()

    def ls(self, path: str = ".") -> List[FileInfo]:
        """ls lists the directory at path (the workspace's root by default)."""
        return self.listing(path).files

    def listing(self, path: str = ".") -> FileList:
        """listing is ls with the listing's path and truncated flag."""
        route = _route("files", self.id, _path(path, "path"))
        if not route.endswith("/"):
            route += "/"
        return from_json(FileList, self.client._call("GET", route))

    def rm(self, path: str) -> None:
        """rm deletes the file or directory (with its contents) at path."""
        self.client._call("DELETE", _route("files", self.id, _path(path, "path")))

    def download(self, path: str, local_dir: str) -> str:
        """download copies path of the workspace into the local directory
        local_dir (created if missing) and returns where it landed: a file
        as local_dir/its name, a directory's contents into local_dir. Nothing
        lands outside local_dir: an entry whose name or link leads out refuses
        the download with RefusedPath naming it, and no link already there
        is followed."""
        src = _path(path, "path")
        os.makedirs(local_dir, exist_ok=True)
        r = self.client._t.request("GET", _route("files", self.id, src), accept="application/octet-stream",
                                   deadline=self.client._deadline())
        with r:
            if not (r.headers.get("Content-Type") or "").startswith("application/json"):
                name = posixpath.basename(src)
                if not name:
                    raise RefusedPath("download %r: no file name" % path, code="refused_path", field="path")
                dest = os.path.join(local_dir, name)
                _write_file(dest, _chunks(r), 0o644)
                return dest
        r = self.client._t.request("GET", _route("archive", self.id, src), accept="application/x-tar",
                                   deadline=self.client._deadline())
        with r:
            _extract(r, local_dir)
        return local_dir


def _chunks(r: Any) -> Iterator[bytes]:
    while True:
        b = r.read(_READ)
        if not b:
            return
        yield b


def _tar_stream(root: str) -> Iterator[bytes]:
    """_tar_stream yields root as a tar archive, entry by entry, as it reads
    the files: nothing is held whole in memory or on disk."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        names = sorted(dirnames) + sorted(filenames)
        for name in names:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue  # gone since the walk saw it
            ti = tarfile.TarInfo(rel)
            ti.mtime = int(st.st_mtime)
            ti.mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                ti.type = tarfile.SYMTYPE
                ti.linkname = os.readlink(full)
            elif stat.S_ISDIR(st.st_mode):
                ti.type = tarfile.DIRTYPE
            elif stat.S_ISREG(st.st_mode):
                ti.type = tarfile.REGTYPE
                ti.size = st.st_size
            else:
                continue  # a fifo, socket or device: not a file to send
            yield ti.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            if ti.type == tarfile.REGTYPE:
                yield from _file_blocks(full, ti.size)
    yield b"\0" * (2 * _BLOCK)


def _file_blocks(path: str, size: int) -> Iterator[bytes]:
    """_file_blocks yields exactly size bytes of the file and the padding to
    the next block: a file that grew or shrank since its header was written
    is cut or filled with zeros, so the archive stays whole."""
    left = size
    with open(path, "rb") as f:
        while left > 0:
            b = f.read(min(_READ, left))
            if not b:
                break
            left -= len(b)
            yield b
    if left > 0:
        yield b"\0" * left
    pad = -size % _BLOCK
    if pad:
        yield b"\0" * pad


class _Reader:
    """_Reader gives tarfile's stream mode a read(n) over a Response."""

    def __init__(self, r: Any):
        self.r = r

    def read(self, n: int = -1) -> bytes:
        return self.r.read(n)


def _leads_out(name: str) -> bool:
    return name.startswith("/") or name == ".." or name.startswith("../")


def _safe_dir(root: str, rel: str) -> str:
    """_safe_dir makes the directories of rel under root, refusing to pass
    through a symbolic link (one an earlier entry, or anyone, planted)."""
    cur = root
    if rel in ("", "."):
        return cur
    for part in rel.split("/"):
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise RefusedPath("download: %r is in the way (not a directory; links are not followed)" % cur,
                              code="refused_path", field="path")
    return cur


def _write_file(dest: str, chunks: Iterator[bytes], mode: int) -> None:
    """_write_file writes dest, replacing a link there rather than following it."""
    try:
        if stat.S_ISLNK(os.lstat(dest).st_mode):
            os.remove(dest)
    except FileNotFoundError:
        pass
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(fd, "wb") as f:
        for b in chunks:
            f.write(b)


def _extract(r: Any, local_dir: str) -> None:
    """_extract unpacks the workspace's archive under local_dir. Every name is
    checked before it is used, and no write goes through a link: an entry
    that would land, or a link that would point, outside local_dir refuses
    the rest with RefusedPath naming it."""
    root = os.path.abspath(local_dir)
    with tarfile.open(fileobj=_Reader(r), mode="r|") as tf:
        for ti in tf:
            name = posixpath.normpath(ti.name)
            if _leads_out(ti.name) or _leads_out(name):
                raise RefusedPath("download: archive entry %r would land outside %s" % (ti.name, local_dir),
                                  code="refused_path", field="path")
            if name == ".":
                continue
            parent = _safe_dir(root, posixpath.dirname(name))
            dest = os.path.join(parent, posixpath.basename(name))
            if ti.isdir():
                _safe_dir(root, name)
            elif ti.isfile():
                f = tf.extractfile(ti)
                _write_file(dest, iter(lambda: f.read(_READ), b""), (ti.mode & 0o777) or 0o644)  # type: ignore[union-attr]
            elif ti.issym():
                target = posixpath.normpath(posixpath.join(posixpath.dirname(name), ti.linkname))
                if ti.linkname.startswith("/") or _leads_out(target):
                    raise RefusedPath("download: archive entry %r is a link to %r, which would lead outside %s"
                                      % (ti.name, ti.linkname, local_dir), code="refused_path", field="path")
                if os.path.lexists(dest):
                    os.remove(dest)
                os.symlink(ti.linkname, dest)
            elif ti.islnk():
                target = posixpath.normpath(ti.linkname)
                if _leads_out(target):
                    raise RefusedPath("download: archive entry %r is a hard link to %r, outside %s"
                                      % (ti.name, ti.linkname, local_dir), code="refused_path", field="path")
                src = os.path.join(_safe_dir(root, posixpath.dirname(target)), posixpath.basename(target))
                if os.path.islink(src):
                    raise RefusedPath("download: archive entry %r is a hard link to a link" % ti.name,
                                      code="refused_path", field="path")
                if os.path.lexists(dest):
                    os.remove(dest)
                os.link(src, dest)
            # fifos, devices and the like: never made on the host
