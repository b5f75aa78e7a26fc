import {
  AgentState,
  AwaitPreStep,
  AwaitStep,
  type Command,
  Completed,
  Enter,
  NextTurnInput,
  PreStepDecided,
  Resume,
  Send,
  StepFinished,
  type StepOutcome,
  TurnStoppingDone,
  createUserMessage,
  eventFromJson,
  eventToJson,
  notificationToJson,
  reduce,
  replay,
} from "./index.js";

/** The pure reducer inside a host's own single-threaded scheduler. */
export class EmbeddedAgent {
  state: AgentState;
  readonly announced: unknown[] = [];

  constructor(readonly log: unknown[]) {
    // durable events as JSON: the only authority (R10)
    this.state = replay(log.map(eventFromJson));
    this.apply(new Resume()); // closes a crash-orphaned turn (R27); a no-op otherwise (D8)
  }

  apply(command: Command): void {
    const transition = reduce(this.state, command); // a typed error: nothing changed
    this.log.push(...transition.durable.map(eventToJson)); // persist first...
    this.state = transition.state; // ...then commit
    this.announced.push(...transition.notifications.map(notificationToJson));
  }

  /** Answer what the core awaits until no turn is open (R16-R19). */
  runUntilIdle(model: (turn: number, step: number) => StepOutcome): void {
    for (let awaiting = this.state.awaiting; awaiting !== null; awaiting = this.state.awaiting) {
      if (awaiting instanceof AwaitPreStep) {
        // the final batch: it may be rewritten, or Reject() the step
        this.apply(new PreStepDecided(awaiting.turn, awaiting.step, new Enter(awaiting.batch)));
      } else if (awaiting instanceof AwaitStep) {
        // an aborted turn closes on any report (R23): skip the model then
        const aborted = this.state.abortCause !== null;
        const outcome = aborted ? new Completed() : model(awaiting.turn, awaiting.step);
        this.apply(new StepFinished(awaiting.turn, awaiting.step, outcome));
      } else {
        // AwaitTurnStopping: listeners may steer (send) here
        this.apply(new TurnStoppingDone(awaiting.turn));
      }
    }
  }
}

export function demo(): { agent: EmbeddedAgent; log: unknown[] } {
  const log: unknown[] = [];
  const agent = new EmbeddedAgent(log);
  const hello = createUserMessage("hello");
  agent.apply(new Send(new NextTurnInput(hello, [], "next-turn", true))); // opens turn 1 (R14)
  agent.runUntilIdle(() => new Completed());
  return { agent, log };
}
