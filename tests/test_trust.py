"""The trust boundary's rule (sweepdir/trust.py): a folder and file of the user's own, writable by no one else,
pass; another user's, or one others can write, are refused until trusted (an argument, MJSWEEP_TRUST, the
config file, `*`)."""

from __future__ import annotations

import os
import pwd

import pytest

from mjsweep.sweepdir import trust
from mjsweep.sweepdir.trust import UntrustedFolderError, granted, is_trusted, require, require_folder

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@pytest.fixture(autouse=True)
def no_trust_configured(monkeypatch, tmp_path):
    monkeypatch.delenv(trust.ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def a_sweep(tmp_path):
    """A sweep folder with a run's statistics: sweep/run/vecnormalize.pkl."""
    sweep = tmp_path / "sweep"
    (sweep / "run").mkdir(parents=True)
    stats = sweep / "run" / "vecnormalize.pkl"
    stats.write_bytes(b"not read")
    return sweep, stats


def test_the_users_own_folder_needs_no_trust(tmp_path):
    sweep, stats = a_sweep(tmp_path)
    require(stats, sweep)
    require_folder(sweep)
    require(sweep / "run" / "missing.pkl", sweep)  # nothing to unpickle


@needs_root
def test_a_file_of_another_user_is_refused_naming_it_its_owner_and_how_to_trust_it(tmp_path):
    sweep, stats = a_sweep(tmp_path)
    os.chown(stats, *nobody())
    with pytest.raises(UntrustedFolderError) as refused:
        require(stats, sweep)
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(f"{stats}: not unpickled")
    assert "owned by nobody" in line and f"--trust {sweep}" in line and trust.ENV in line
    with pytest.raises(UntrustedFolderError, match="owned by nobody"):
        require_folder(sweep)


@needs_root
def test_a_folder_of_another_user_on_the_way_is_refused(tmp_path):
    sweep, stats = a_sweep(tmp_path)
    os.chown(sweep / "run", *nobody())
    with pytest.raises(UntrustedFolderError, match=f"its folder {sweep / 'run'} is owned by nobody"):
        require(stats, sweep)
    with pytest.raises(UntrustedFolderError, match="owned by nobody"):
        require_folder(sweep)


def test_a_folder_others_can_write_is_refused(tmp_path):
    sweep, stats = a_sweep(tmp_path)
    sweep.chmod(0o757)
    with pytest.raises(UntrustedFolderError, match="is writable by every user"):
        require(stats, sweep)
    with pytest.raises(UntrustedFolderError, match="is writable by every user"):
        require_folder(sweep)


@needs_root
def test_a_file_a_group_of_others_can_write_is_refused(tmp_path):
    sweep, stats = a_sweep(tmp_path)
    os.chown(stats, os.geteuid(), nobody()[1])
    stats.chmod(0o664)
    with pytest.raises(UntrustedFolderError, match="is writable by group"):
        require(stats, sweep)


def test_only_pickled_files_are_judged_in_a_folder(tmp_path):
    sweep, _ = a_sweep(tmp_path)
    report = sweep / "report.md"
    report.write_text("# a report")
    report.chmod(0o666)  # not unpickled: no matter
    require_folder(sweep)
    (sweep / "run" / "model.zip").write_bytes(b"")
    (sweep / "run" / "model.zip").chmod(0o666)
    with pytest.raises(UntrustedFolderError, match="model.zip: not unpickled"):
        require_folder(sweep)


@needs_root
def test_trust_given_listed_or_configured_lets_the_folder_and_what_is_in_it_load(tmp_path, monkeypatch):
    sweep, stats = a_sweep(tmp_path)
    os.chown(sweep, *nobody())
    os.chown(stats, *nobody())
    with pytest.raises(UntrustedFolderError):
        require(stats, sweep)
    require(stats, sweep, [sweep])
    require(stats, sweep, [tmp_path])  # a folder above it
    require_folder(sweep, [str(sweep)])
    assert not is_trusted(sweep, [tmp_path / "elsewhere"])

    monkeypatch.setenv(trust.ENV, os.pathsep.join([str(tmp_path / "elsewhere"), str(sweep)]))
    require(stats, sweep)
    monkeypatch.setenv(trust.ENV, "*")
    require_folder(sweep)
    monkeypatch.delenv(trust.ENV)

    config = trust.config_file()
    config.parent.mkdir(parents=True)
    config.write_text(f"# folders I trust\n\n{sweep}\n")
    require(stats, sweep)
    config.write_text("# nothing\n")
    with pytest.raises(UntrustedFolderError):
        require(stats, sweep)


def test_granted_trust_reaches_the_environment_of_processes_started_within_it(tmp_path, monkeypatch):
    monkeypatch.setenv(trust.ENV, "/already")
    with granted([tmp_path]):
        assert os.environ[trust.ENV].split(os.pathsep) == [str(tmp_path), "/already"]
        assert is_trusted(tmp_path / "sweep")
    assert os.environ[trust.ENV] == "/already"
    monkeypatch.delenv(trust.ENV)
    with granted([tmp_path]):
        assert is_trusted(tmp_path)
    assert trust.ENV not in os.environ


def test_a_file_only_the_users_own_group_can_write_passes(tmp_path):
    import grp

    me = pwd.getpwuid(os.geteuid())
    own = grp.getgrgid(me.pw_gid)
    if own.gr_name != me.pw_name or set(own.gr_mem) - {me.pw_name}:
        pytest.skip("the user's primary group is not a group of their own")
    sweep, stats = a_sweep(tmp_path)
    os.chown(stats, me.pw_uid, me.pw_gid)
    stats.chmod(0o664)  # as a umask of 002 leaves it
    require(stats, sweep)
