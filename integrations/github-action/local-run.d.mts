// The types of local-run.mjs, for the tests that drive it.
export interface StepResult {
  /** The step ran here (a `run:` step whose `if:` held). */
  ran: boolean;
  code?: number | null;
  stdout?: string;
  stderr?: string;
  /** What it wrote to $GITHUB_OUTPUT. */
  outputs?: Record<string, string>;
  /** A `uses:` step that would run: the action it uses and its resolved `with:`. */
  uses?: string;
  with?: Record<string, string>;
}

export interface ActionRun {
  steps: Record<string, StepResult>;
  /** action.yml's outputs, resolved. */
  outputs: Record<string, string>;
  /** What the steps appended to $GITHUB_STEP_SUMMARY. */
  summary: string;
  failed: boolean;
  /** The run's temporary folder ($RUNNER_TEMP is in it): the caller removes it. */
  temp: string;
}

export interface ActionYml {
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string; value: string }>;
  runs: {
    using: string;
    steps: {
      id?: string;
      name?: string;
      if?: string;
      uses?: string;
      with?: Record<string, string>;
      shell?: string;
      run?: string;
      env?: Record<string, string>;
    }[];
  };
}

export function readAction(root?: string): ActionYml;
export function parseOutputFile(text: string): Record<string, string>;
export function runAction(options?: {
  inputs?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
  workspace?: string;
  skip?: string[];
  root?: string;
}): Promise<ActionRun>;
