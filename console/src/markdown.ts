/**
 * The console's markdown: it parses the texts it reads (records, drafts) itself, then builds the
 * nodes with the web chat's renderer. The chat page and the widget get the parse from the service
 * instead, so they carry no parser.
 */
import { markdownBlock } from "../../webchat/src/markdown";
import { parseMarkdown } from "../../src/shared/markdown";

export function markdownText(doc: Document, text: string, className: string): HTMLDivElement {
  return markdownBlock(doc, parseMarkdown(text), className);
}
