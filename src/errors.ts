/** Exit codes: documented in `--help` and the README. */
export const ExitCode = {
  /** Done (reap/list), or proceed (breakers). */
  OK: 0,
  /** At least one removal failed (reap), or a breaker tripped. */
  FAILED: 1,
  TRIPPED: 1,
  /** Bad usage or input. */
  USAGE: 2,
  /** A hook's answer where the agent's only channel is exit 2 with the text on stderr (a decision, not an error). */
  HOOK_ANSWER: 2,
  /** Engine unreachable, or the run timed out. */
  ENGINE: 3,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** An error the CLI reports as one line and maps to an exit code. */
export class JanitorError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad flags, arguments, environment or config values: exit 2. */
export class UsageError extends JanitorError {
  constructor(message: string) {
    super(message, ExitCode.USAGE);
  }
}

/** The engine could not be reached or did not answer in time: exit 3. */
export class EngineUnreachableError extends JanitorError {
  constructor(
    message: string,
    readonly host?: string,
  ) {
    super(message, ExitCode.ENGINE);
  }
}

/**
 * The address answers HTTP but is not a Docker-compatible engine (a web server, a proxy's own error page, a wrong
 * port): its answers carry none of the engine API's headers. Exit 3, as an engine that cannot be reached.
 */
export class NotADockerEngineError extends EngineUnreachableError {
  constructor(host: string, what: string, status: number) {
    super(
      `${host} is not a Docker engine (it answered ${what} with HTTP ${status} and without the engine API's Api-Version header): ` +
        'point --host, --context or DOCKER_HOST at a Docker or Podman API socket (unix:///var/run/docker.sock, tcp://HOST:2375)',
      host,
    );
  }

  /** Whether `message`, reported for `host`, is this error's (it names the host itself). */
  static says(host: string, message: string | null): boolean {
    return message !== null && message.startsWith(`${host} is not a Docker engine`);
  }
}

/** An engine request answered with an HTTP error status. */
export class EngineRequestError extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
    this.name = 'EngineRequestError';
  }
}

/** A byte stream that is not one well-formed JSON array (see `forEachArrayElement`); the message names the problem. */
export class MalformedJsonArrayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedJsonArrayError';
  }
}

/** One line for any thrown value, never a stack. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message.split('\n')[0] ?? String(err);
  return String(err);
}
