"""An unknown --provider or --gpu is an error with a did-you-mean (exit 2), never "no rows"."""

from __future__ import annotations

import pytest

from tracker.cli import main


def fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("command", [["prices"], ["history", "--gpu", "H100"], ["trends"], ["value"],
                                     ["tco", "--gpu", "H100"], ["recommend", "--params", "7B", "--workload", "inference"]])
def test_unknown_provider_suggests_the_closest(replay_store: str, capsys: pytest.CaptureFixture[str],
                                               command: list[str]) -> None:
    err = fails(capsys, "--db", replay_store, *command, "--provider", "runpd")
    assert err == ("error: --provider: no provider 'runpd' (did you mean 'runpod'?) "
                   "(list them with `gpu-tracker providers`)")


def test_a_registered_provider_not_yet_scraped_is_not_an_error(replay_store: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    main(["--db", replay_store, "prices", "--provider", "vastai", "--format", "json"])
    assert capsys.readouterr().out.strip() == "[]"


def test_unknown_gpu_suggests_the_closest(replay_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = fails(capsys, "--db", replay_store, "prices", "--gpu", "MI300Z")
    assert err.startswith("error: --gpu: 'MI300Z' matches no GPU in the catalog (did you mean 'MI300X'?)")
