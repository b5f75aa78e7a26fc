"""The inspector in Debian's Chromium (R40) against a real ``inbox-core serve STORE --host
inbox_core.shell.echo:echo_host --http`` process (R39): controls found by role and
accessible name, as the brief pins them; what the page shows checked against what the
log says through the API. The echo host holds each step for the process's
``INBOX_CORE_ECHO_DELAY`` seconds (and returns at once when aborted), so a test acts while a
turn runs; nothing here asserts a duration.

``INBOX_CORE_SCREENSHOT=1`` makes the promotion scenario write README's picture,
docs/inspector.png.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from tests.http_ui.node import ROOT
from tests.http_ui.served import Served, cli

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture skips (or under CI=true fails) the tests
    expect = None  # type: ignore[assignment]

SCREENSHOT = ROOT / "docs" / "inspector.png"


# ----------------------------------------------------------------- the page, by role


def status(page: Any) -> Any:
    return page.get_by_role("status", name="Status", exact=True)


def message_box(page: Any) -> Any:
    return page.get_by_role("textbox", name="Message", exact=True)


def button(scope: Any, name: str) -> Any:
    return scope.get_by_role("button", name=name, exact=True)


def alert(page: Any) -> Any:
    return page.get_by_role("alert")


def alert_named(page: Any, title: str) -> Any:
    """The alert named by a problem's title (R40: the error class, or the status phrase)."""
    return page.get_by_role("alert", name=title, exact=True)


def pending(page: Any, name: str) -> Any:
    """The items of the list "Next turn" or "Next step"."""
    return page.get_by_role("list", name=name, exact=True).get_by_role("listitem")


def turns(page: Any) -> Any:
    return page.get_by_role("list", name="Timeline", exact=True).get_by_role("listitem")


def turn(page: Any, n: int) -> Any:
    return turns(page).filter(has=page.get_by_role("heading", name=f"turn {n}", exact=True))


def send(page: Any, text: str, intent: str) -> None:
    """Type into the composer and press the intent's button; it empties once sent."""
    message_box(page).fill(text)
    button(page, intent).click()
    expect(message_box(page)).to_have_value("")


def open_agent(page: Any, served: Served, agent: str) -> None:
    page.goto(served.page(agent))
    expect(page.locator("#connection")).to_have_text("live")


def start_turn(page: Any, served: Served, agent: str, text: str) -> None:
    """Open the agent's page and follow up with ``text``: turn 1 runs."""
    open_agent(page, served, agent)
    send(page, text, "Follow up")
    expect(status(page)).to_contain_text("turn 1")


# ------------------------------------------------------------------ what the log says


def texts(messages: list[Any]) -> list[str]:
    return [" ".join(b["text"] for b in m["content"] if b.get("type") == "text") for m in messages]


def admitted(served: Served, agent: str) -> dict[tuple[int, int], list[str]]:
    """The admitted texts per (turn, step), from the agent's transcript (R30)."""
    steps: dict[tuple[int, int], list[str]] = {}
    for block in served.get(agent, "/transcript")["transcript"]:
        for item in block.get("items", []):
            if item["kind"] == "step":
                messages = [i["message"] for i in item["items"] if i["kind"] == "message"]
                steps[block["turn"], item["step"]] = texts(messages)
    return steps


def pending_texts(served: Served, agent: str, target: str) -> list[str]:
    return texts([entry["message"] for entry in served.get(agent)[target]])


# ------------------------------------------------------------------------- scenarios


def test_r40_a_followup_typed_into_the_composer_runs_a_turn_on_the_timeline(
    page: Any, serve: Any
) -> None:
    served = serve(delay=3)  # the running state lasts long enough to be seen
    open_agent(page, served, "alice")
    expect(status(page)).to_have_text("idle")
    expect(turns(page)).to_have_count(0)
    expect(button(page, "Stop")).to_have_count(0)  # offered while a turn runs
    send(page, "hello there", "Follow up")
    expect(status(page)).to_contain_text("running")
    expect(status(page)).to_contain_text("turn 1")
    expect(button(page, "Stop")).to_be_visible()
    expect(turn(page, 1)).to_contain_text("hello there")
    expect(turn(page, 1)).to_contain_text("completed")
    expect(status(page)).to_have_text("idle")
    expect(button(page, "Stop")).to_have_count(0)
    expect(alert(page)).to_have_count(0)
    agents = page.get_by_role("list", name="Agents", exact=True)
    expect(agents.get_by_role("link", name="alice", exact=True)).to_have_attribute(
        "href", "#/agents/alice"
    )
    assert admitted(served, "alice") == {(1, 1): ["hello there"]}


def test_r40_r8_a_queued_followup_promoted_into_the_running_turn_enters_its_next_step(
    page: Any, serve: Any
) -> None:
    served = serve(delay=4)  # time to queue two followups and promote one inside step 1
    start_turn(page, served, "bob", "first question")
    send(page, "second thought", "Follow up")
    send(page, "third topic", "Follow up")
    next_turn = pending(page, "Next turn")
    expect(next_turn).to_have_count(2)
    button(next_turn.filter(has_text="second thought"), "Steer now").click()
    expect(turn(page, 1).locator(".step").filter(has_text="second thought")).to_contain_text(
        "step 2"
    )
    expect(turn(page, 2)).to_contain_text("third topic")
    expect(alert(page)).to_have_count(0)
    if os.environ.get("INBOX_CORE_SCREENSHOT"):
        screenshot(page, served)
    served.wait_until("bob", lambda a: a["status"] == "idle" and a["lastTurn"] == 2)
    expect(turn(page, 2)).to_contain_text("completed")
    assert admitted(served, "bob") == {
        (1, 1): ["first question"],
        (1, 2): ["second thought"],
        (2, 1): ["third topic"],
    }


def screenshot(page: Any, served: Served) -> None:
    """README's picture: turn 2 running, entries waiting in both lists, one with contexts."""
    served.post(
        "bob",
        "queue",
        {
            "message": {"content": "Then book a table for two"},
            "contexts": [
                {
                    "content": "calendar: free after 19:00",
                    "source": {"kind": "plugin", "plugin": "calendar"},
                }
            ],
        },
    )
    served.post("bob", "inject", {"message": {"content": "the user is on a phone"}})
    expect(pending(page, "Next turn")).to_have_count(1)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_r40_r7_edit_and_remove_a_queued_entry(page: Any, serve: Any) -> None:
    served = serve()
    served.post(
        "carol",
        "queue",
        {
            "message": {"content": "with context"},
            "contexts": [
                {"content": "ctx: on a phone", "source": {"kind": "plugin", "plugin": "device"}}
            ],
        },
    )
    open_agent(page, served, "carol")
    send(page, "draft one", "Queue")
    send(page, "draft two", "Queue")
    entries = pending(page, "Next turn")
    expect(entries).to_have_count(3)  # a context is shown inside its entry, never as an item
    with_context = entries.filter(has_text="with context")
    expect(with_context).to_contain_text("ctx: on a phone")
    expect(with_context).to_contain_text("plugin device")
    expect(with_context).to_contain_text("quiet")

    button(entries.filter(has_text="draft one"), "Edit").click()
    box = page.get_by_role("textbox", name="Edit message", exact=True)
    expect(box).to_have_value("draft one")
    expect(box).to_be_focused()
    box.fill("draft one, edited")
    button(page, "Save").click()
    expect(box).to_have_count(0)
    expect(entries.filter(has_text="draft one, edited")).to_have_count(1)

    button(entries.filter(has_text="draft two"), "Edit").click()
    box.fill("never saved")
    button(page, "Cancel").click()
    expect(box).to_have_count(0)
    expect(button(entries.filter(has_text="draft two"), "Edit")).to_be_focused()

    button(entries.filter(has_text="draft two"), "Remove").click()
    expect(entries).to_have_count(2)
    expect(entries.filter(has_text="draft two")).to_have_count(0)
    fates = page.get_by_role("table", name="Fates", exact=True).get_by_role("row")
    expect(fates.filter(has_text="draft two")).to_contain_text("canceled")
    expect(status(page)).to_have_text("idle")
    expect(alert(page)).to_have_count(0)
    assert pending_texts(served, "carol", "nextTurn") == ["with context", "draft one, edited"]
    assert served.get("carol")["lastTurn"] == 0


def test_r40_r22_stop_keeps_the_queue_and_the_next_turn_starts(page: Any, serve: Any) -> None:
    served = serve(delay=60)  # a step that only an abort ends
    start_turn(page, served, "dave", "long task")
    send(page, "queued next", "Follow up")
    send(page, "parked", "Queue")
    expect(pending(page, "Next turn")).to_have_count(2)
    button(page, "Stop").click()
    expect(turn(page, 1)).to_contain_text("aborted (user)")
    expect(status(page)).to_contain_text("turn 2")
    expect(turn(page, 2)).to_contain_text("queued next")
    expect(pending(page, "Next turn")).to_have_count(1)
    expect(pending(page, "Next turn")).to_contain_text("parked")
    expect(alert(page)).to_have_count(0)
    agent = served.get("dave")
    assert (agent["status"], agent["lastTurn"], agent["abortCause"]) == ("running", 2, None)
    assert texts([e["message"] for e in agent["nextTurn"]]) == ["parked"]

    # a page opened now says nothing before it has read the log: never "idle" on the way
    later = page.context.new_page()
    later.add_init_script(RECORD_STATUS)
    later.goto(served.page("dave"))
    expect(status(later)).to_contain_text("turn 2")
    shown = later.evaluate("window.statusShown")
    assert "idle" not in shown, shown
    later.close()


RECORD_STATUS = """
window.statusShown = [];
new MutationObserver(() => {
  const status = document.getElementById("status");
  if (status) window.statusShown.push(status.textContent);
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


def test_r40_r34_a_stop_for_a_turn_that_ended_meanwhile_shows_turn_mismatch(
    page: Any, serve: Any
) -> None:
    served = serve(delay=60)
    start_turn(page, served, "erin", "one")
    send(page, "two", "Follow up")
    expect(pending(page, "Next turn")).to_have_count(1)
    held: list[Any] = []

    def hold(route: Any) -> None:  # the click's request waits here (Playwright wants a function)
        held.append(route)

    page.route("**/v1/agents/erin/commands", hold)
    button(page, "Stop").click()
    for _ in range(400):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the Stop request never left the page"
    # meanwhile turn 1 ends (another client stops it, keeping the queue): turn 2 starts
    served.post(
        "erin", "commands", {"type": "cancel", "cause": {"kind": "user"}, "keepInbox": True}
    )
    served.wait_until("erin", lambda a: a["lastTurn"] == 2 and a["status"] == "running")
    held[0].continue_()
    expect(alert(page)).to_have_text("TurnMismatch: the turn on screen already ended")
    expect(alert_named(page, "TurnMismatch")).to_have_count(1)
    expect(status(page)).to_contain_text("turn 2")
    expect(turn(page, 2)).to_contain_text("two")
    page.unroute("**/v1/agents/erin/commands")
    agent = served.get("erin")  # it stopped nothing
    assert (agent["status"], agent["lastTurn"], agent["abortCause"]) == ("running", 2, None)
    aborts = [e for e in served.events("erin") if e["type"] == "turn/abort"]
    assert [a["data"]["turn"] for a in aborts] == [1]


def test_r40_r15_an_inject_while_idle_waits_and_rides_along_with_the_next_followup(
    page: Any, serve: Any
) -> None:
    served = serve(delay=0.5)
    open_agent(page, served, "frank")
    send(page, "the user is on a phone", "Inject")
    next_step = pending(page, "Next step")
    expect(next_step).to_have_count(1)
    expect(next_step).to_contain_text("quiet")
    expect(status(page)).to_have_text("idle")
    expect(turns(page)).to_have_count(0)
    assert served.get("frank")["lastTurn"] == 0  # it waits: no turn
    send(page, "what should I pack?", "Follow up")
    expect(turn(page, 1)).to_contain_text("completed")
    expect(turn(page, 1)).to_contain_text("the user is on a phone")
    expect(next_step).to_have_count(0)
    assert admitted(served, "frank") == {(1, 1): ["the user is on a phone", "what should I pack?"]}


def test_r40_r39_a_server_restarted_mid_turn_the_page_catches_up_with_nothing_lost_or_doubled(
    page: Any, serve: Any
) -> None:
    served = serve(delay=3)
    start_turn(page, served, "gina", "survive this")
    # killed inside the step: its claim was decided, so Resume restores nothing (R27)
    expect(status(page)).to_contain_text("step 1")
    served.kill()
    connection = page.locator("#connection")
    expect(connection).to_contain_text("reconnecting")
    served.start()  # the same store and port; the worker resumes the open turn (R27)
    expect(connection).to_have_text("live")
    expect(turn(page, 1)).to_contain_text("interrupted")
    send(page, "after the restart", "Follow up")
    expect(turn(page, 2)).to_contain_text("completed")
    served.wait_until("gina", lambda a: a["status"] == "idle" and a["lastTurn"] == 2)
    events = served.events("gina")
    expect(page.locator("body")).to_have_attribute("data-seq", str(len(events)))
    stats = page.evaluate("window.inspector.stats")
    assert stats["connections"] >= 2
    assert (stats["events"], stats["duplicates"], stats["gaps"]) == (len(events), 0, 0)
    fold = "window.inspector.fold()"
    assert page.evaluate(f"{fold}.transcript()") == served.get("gina", "/transcript")["transcript"]
    page_fates = page.evaluate(f"Object.fromEntries({fold}.fates())")
    assert page_fates == served.get("gina", "/fates")["fates"]


def test_r40_r39_a_team_a_token_cannot_see_or_act_on_team_b(page: Any, serve: Any) -> None:
    tokens: dict[str, str] = {}

    def add_tokens(served: Served) -> None:
        for name, pattern in (("admin", "*"), ("team-a", "team-a/*")):
            added = cli(
                "token", "add", served.store, name, "--scopes", "read,post", "--agents", pattern
            )
            tokens[name] = added.stdout.strip()

    served = serve(before=add_tokens)
    served.token = tokens["admin"]
    served.post("team-a/1", "queue", {"message": {"content": "for team a"}})
    served.post("team-b/x", "queue", {"message": {"content": "secret of team b"}})
    team_b_log = served.events("team-b/x")

    page.goto(served.page())
    expect(alert(page)).to_contain_text("Unauthorized")
    expect(alert_named(page, "Unauthorized")).to_have_count(1)
    page.get_by_role("textbox", name="Token", exact=True).fill(tokens["team-a"])
    button(page, "Use token").click()
    agents = page.get_by_role("list", name="Agents", exact=True)
    expect(agents.get_by_role("link", name="team-a/1", exact=True)).to_be_visible()
    expect(agents.get_by_role("link")).to_have_count(1)  # team-b/x is not listed
    assert page.evaluate("sessionStorage.getItem('inbox-core-token')") == tokens["team-a"]
    assert page.evaluate("localStorage.length") == 0
    assert tokens["team-a"] not in page.url

    agents.get_by_role("link", name="team-a/1", exact=True).click()
    expect(pending(page, "Next turn")).to_contain_text("for team a")
    expect(alert(page)).to_have_count(0)

    page.goto(served.page("team-b/x"))
    expect(alert(page)).to_contain_text("Forbidden")
    expect(pending(page, "Next turn")).to_have_count(0)
    expect(page.get_by_text("secret of team b")).to_have_count(0)
    send_refused = message_box(page)
    send_refused.fill("let me in")
    button(page, "Follow up").click()
    expect(alert(page)).to_have_text("Forbidden: the token may not do this for this agent")
    expect(alert_named(page, "Forbidden")).to_have_count(1)
    # nothing the page may read is there to stop or clear, so it offers neither (R40 v5)
    expect(button(page, "Stop and clear")).to_have_count(0)
    expect(button(page, "Stop")).to_have_count(0)
    assert served.events("team-b/x") == team_b_log


def test_r40_r30_r18_host_records_collapsed_as_json_and_every_end_reason(
    page: Any, serve: Any
) -> None:
    served = serve(host="tests.http_ui.hosts:replying")
    open_agent(page, served, "ivan")
    send(page, "hi", "Follow up")
    first = turn(page, 1)
    expect(first).to_contain_text("completed")
    record = first.get_by_text("host/reply", exact=True)
    reply = first.locator("details").filter(has=page.get_by_text("host/reply")).locator("pre")
    expect(reply).to_be_hidden()  # collapsed
    expect(first.get_by_text("host/output", exact=True)).to_be_visible()  # the echo's (R43)
    record.click()
    expect(reply).to_contain_text('"text": "echo: hi"')
    send(page, "fail", "Follow up")
    expect(turn(page, 2)).to_contain_text("error: the model refused (model-error)")
    expect(status(page)).to_have_text("idle")


def test_r40_r39_any_agent_id_and_any_text_are_shown_as_written(page: Any, serve: Any) -> None:
    served = serve()
    agent = "we/ird %2F?#ü"
    hostile = '<img src=x onerror="window.pwned = 1"> & </li>'
    served.post(agent, "queue", {"message": {"content": hostile}})
    page.goto(served.page())
    agents = page.get_by_role("list", name="Agents", exact=True)
    agents.get_by_role("link", name=agent, exact=True).click()
    assert page.url.endswith(f"#/agents/{quote(agent, safe='')}")
    expect(pending(page, "Next turn").locator(".entry-text")).to_have_text(hostile)
    send(page, "and a followup", "Follow up")
    expect(turn(page, 1)).to_contain_text(hostile)  # the quiet entry ahead opens turn 1 (R14)
    expect(turn(page, 2)).to_contain_text("and a followup")
    assert page.evaluate("window.pwned") is None
    assert admitted(served, agent) == {(1, 1): [hostile], (2, 1): ["and a followup"]}


def test_r40_every_control_is_labelled_keyboard_reachable_and_fits_a_phone(
    page: Any, serve: Any
) -> None:
    served = serve(delay=0.5)
    served.post("hana", "queue", {"message": {"content": "queued"}})
    page.set_viewport_size({"width": 390, "height": 844})
    open_agent(page, served, "hana")
    expect(pending(page, "Next turn")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    unlabelled = page.evaluate(
        """[...document.querySelectorAll('input, textarea, button, a')]
             .filter((el) => !(el.labels?.length || el.getAttribute('aria-label')
                               || el.textContent.trim()))
             .map((el) => el.outerHTML)"""
    )
    assert unlabelled == []
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        reached.append(
            page.evaluate(
                """(() => { const el = document.activeElement;
                     return el.labels?.[0]?.textContent ?? el.textContent.trim(); })()"""
            )
        )
    wanted = {"Token", "Use token", "hana", "Agent id", "Open", "Stop and clear", "Message"}
    wanted |= {"Follow up", "Queue", "Steer", "Inject", "Edit", "Remove", "Steer now"}
    assert wanted <= set(reached), wanted - set(reached)
    message_box(page).focus()
    page.keyboard.type("sent from the keyboard")
    page.keyboard.press("Control+Enter")  # a followup: the quiet entry ahead of it opens turn 1
    expect(turn(page, 2)).to_contain_text("sent from the keyboard")
