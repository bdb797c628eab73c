import { describe, expect, it } from 'vitest';
import { mcpConfigText } from './json';

describe('mcpConfigText', () => {
  it('puts command before args in each server, as MCP client configs are written', () => {
    const text = mcpConfigText({ mcpServers: { toolgate: { args: ['mcp-bridge'], command: 'toolgate' } } });
    expect(text).toBe('{\n  "mcpServers": {\n    "toolgate": {\n      "command": "toolgate",\n      "args": [\n        "mcp-bridge"\n      ]\n    }\n  }\n}');
    expect(JSON.parse(text)).toEqual({ mcpServers: { toolgate: { command: 'toolgate', args: ['mcp-bridge'] } } });
  });
});
