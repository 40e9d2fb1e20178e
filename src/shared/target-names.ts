import { z } from "zod";

/** Tool, preset and agent names (decisions §4): also the OpenAI function-name alphabet. */
export const TARGET_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const targetNameSchema = z.string().regex(TARGET_NAME, { message: "must be 1-64 characters of letters, digits, _ and -" });
