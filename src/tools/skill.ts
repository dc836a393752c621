import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";

const parameters = z.object({
  name: z.string().min(1).describe("The skill's name, as the system prompt's skill list gives it"),
});

/** skill: loads an Agent Skill's instructions on demand; its folder's files become readable. */
export default defineTool({
  id: "skill",
  kind: "read",
  description: [
    "Load a skill: instructions for a kind of task, listed by name in the system prompt's Skills section.",
    "Call it as soon as the task matches a skill's description, before doing the work, and follow what it says.",
    "Returns the skill's instructions and its folder's files (relative to `dir`); read those with read when the instructions point to them.",
  ].join(" "),
  parameters,
  requires: {},
  output: { field: "instructions", maxBytes: 256 * 1024 },
  title: (args) => `Load skill ${args.name}`,
  async execute(args, ctx) {
    const skills = ctx.host.skills;
    if (!skills) throw new ToolError("unavailable", "This host offers no skills.");
    const skill = await skills.load(args.name);
    if (!skill) {
      const names = skills.list().map((s) => s.name);
      throw new ToolError(
        "not_found",
        names.length
          ? `There is no skill named "${args.name}". Available skills: ${names.join(", ")}.`
          : `There is no skill named "${args.name}": this session has no skills.`,
      );
    }
    return {
      name: skill.name,
      dir: skill.dir,
      instructions: skill.body,
      files: skill.files,
      ...(skill.moreFiles ? { files_note: `The folder holds more files than the ${skill.files.length} listed: use glob on dir.` } : {}),
    };
  },
  display: (data) => ({
    text: [
      `Skill ${data.name} (${data.dir})`,
      ...(data.files.length ? [`Files: ${data.files.join(", ")}`] : []),
      "",
      data.instructions,
    ].join("\n"),
    markdown: true,
  }),
});
