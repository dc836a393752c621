import { packageInfo } from "./host/package-root.js";

/** The package version, from the toolhost package.json above this module. */
export const version: string = packageInfo()?.version ?? "0.0.0";
