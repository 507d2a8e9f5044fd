-- Headless end-to-end test of the racelens plug-in against a racelens server.
--
-- Environment (set by run.sh):
--   RACELENS_E2E_CMD     server command, one argument per line
--   RACELENS_E2E_FILE    the C file to open (a copy of test/race.c)
--   RACELENS_E2E_RESULT  file that receives the PASS/FAIL report
--   RACELENS_E2E_STRICT_EXPLAIN=1  make a failing racelens.explain fatal
--
-- Steps: open the file, wait for racelens diagnostics on the unguarded
-- `counter++`, request code actions for that diagnostic, apply the first
-- quick fix, wait until the race diagnostics are gone, then :RacelensRestart.
-- Also runs :RacelensExplain (fatal only with RACELENS_E2E_STRICT_EXPLAIN=1).
-- Worst case about 55 s. Exits with :qall! on success, :cquit 2 on failure.

local result_file = assert(os.getenv('RACELENS_E2E_RESULT'), 'RACELENS_E2E_RESULT not set')
local file = assert(os.getenv('RACELENS_E2E_FILE'), 'RACELENS_E2E_FILE not set')
local cmd = vim.split(assert(os.getenv('RACELENS_E2E_CMD'), 'RACELENS_E2E_CMD not set'), '\n', { plain = true, trimempty = true })
local strict_explain = os.getenv('RACELENS_E2E_STRICT_EXPLAIN') == '1'

local uv = vim.uv or vim.loop
local report = {}
local failed = false
local started = uv.hrtime()

local function elapsed()
  return (uv.hrtime() - started) / 1e9
end

local function log(fmt, ...)
  table.insert(report, string.format('[%5.2fs] ', elapsed()) .. string.format(fmt, ...))
end

local function check(cond, fmt, ...)
  if cond then
    log('ok: ' .. fmt, ...)
  else
    failed = true
    log('FAIL: ' .. fmt, ...)
    error('check failed', 0)
  end
end

local function finish()
  table.insert(report, failed and 'FAIL' or 'PASS')
  local f = io.open(result_file, 'w')
  if f then
    f:write(table.concat(report, '\n') .. '\n')
    f:close()
  end
  if failed then
    vim.cmd('cquit 2')
  else
    vim.cmd('qall!')
  end
end

-- Capture notifications (explain "no race" message, errors of the plug-in).
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
  log('notify(%s): %s', tostring(level), msg)
end

-- Keep the raw LSP diagnostics so that the code action request carries them
-- exactly as the server sent them, like a real client does.
local raw = {}
local publish = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
  if result and result.uri then
    raw[result.uri] = result.diagnostics
  end
  return publish(err, result, ctx, config)
end

local function race_diagnostics(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'racelens' then
      table.insert(out, d)
    end
  end
  table.sort(out, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  return out
end

local function find_line(buf, needle)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i - 1
    end
  end
  return nil
end

local function count(buf, needle)
  local n = 0
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local init = 1
    while true do
      local s, e = line:find(needle, init, true)
      if not s then
        break
      end
      n = n + 1
      init = e + 1
    end
  end
  return n
end

local function run()
  local racelens = require('racelens')
  local v = vim.version()
  log('nvim %d.%d.%d, server: %s', v.major, v.minor, v.patch, table.concat(cmd, ' '))
  racelens.setup({
    cmd = cmd,
    root_markers = { '.racelens-e2e-root' },
  })

  -- 1. Open the fixture.
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  if vim.bo[buf].filetype ~= 'c' then
    vim.bo[buf].filetype = 'c'
  end
  local unguarded = find_line(buf, '/* unguarded')
  local guarded = find_line(buf, '/* guarded')
  check(unguarded and guarded, 'fixture has a guarded (line %s) and an unguarded (line %s) counter++',
    tostring(guarded and guarded + 1), tostring(unguarded and unguarded + 1))
  local counter_writes = count(buf, 'counter++')
  local marker = '/* unguarded — races with worker */'
  check(count(buf, marker) == 1, 'fixture has the non-ASCII marker comment once')

  -- Attaching and the first diagnostics share one 20 s budget.
  local diag_deadline = uv.now() + 20000
  local function remaining()
    return math.max(0, diag_deadline - uv.now())
  end
  local client
  local ok_attach = vim.wait(remaining(), function()
    client = racelens.get_clients(buf)[1]
    return client ~= nil
  end, 50)
  check(ok_attach, 'a racelens client is attached to the buffer')
  check(client.config.root_dir == vim.fn.fnamemodify(file, ':p:h'), 'root_dir is the marker directory (%s)',
    tostring(client.config.root_dir))
  check(client.offset_encoding == 'utf-8', 'offset encoding taken from the server: %s', tostring(client.offset_encoding))

  -- 2. Race diagnostics.
  local diags = {}
  local got = vim.wait(remaining(), function()
    diags = race_diagnostics(buf)
    return #diags > 0
  end, 50)
  check(got, 'racelens diagnostics arrived (%d)', #diags)
  local on_unguarded
  for _, d in ipairs(diags) do
    log('diagnostic: line %d col %d severity %s code %s: %s', d.lnum + 1, d.col + 1, tostring(d.severity),
      tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)), d.message)
    check(d.lnum == unguarded or d.lnum == guarded, 'diagnostic on line %d is on one of the counter++ lines', d.lnum + 1)
    check(d.message:find('counter', 1, true) ~= nil, 'message names `counter`')
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    check(code == 'data-race', 'code is data-race')
    if d.lnum == unguarded and on_unguarded == nil then
      on_unguarded = d
    end
  end
  check(on_unguarded ~= nil, 'a diagnostic is on the unguarded counter++ (line %d)', unguarded + 1)

  -- The LSP form of that diagnostic, as published.
  local uri = vim.uri_from_bufnr(buf)
  local lsp_diag
  for _, d in ipairs(raw[uri] or {}) do
    if d.source == 'racelens' and d.range.start.line == unguarded then
      lsp_diag = d
      break
    end
  end
  check(lsp_diag ~= nil, 'the raw LSP diagnostic was captured')

  -- :RacelensExplain with the cursor on the race, while the race exists.
  vim.api.nvim_win_set_cursor(0, { on_unguarded.lnum + 1, on_unguarded.col })
  local notes_before = #notes
  local float_win
  vim.cmd('RacelensExplain')
  vim.wait(4000, function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= '' then
        float_win = w
        return true
      end
    end
    return #notes > notes_before
  end, 20)
  if float_win then
    local flines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float_win), 0, -1, false)
    for _, l in ipairs(flines) do
      log('  | %s', l)
    end
    check(flines[1]:find('racelens:', 1, true) == 1 and table.concat(flines, '\n'):find('counter', 1, true),
      ':RacelensExplain showed the explanation in a floating window (%d lines)', #flines)
    vim.api.nvim_win_close(float_win, true)
  elseif strict_explain then
    check(false, ':RacelensExplain showed an explanation (messages: %s)', vim.inspect(notes))
  else
    log('WARN: :RacelensExplain showed no explanation; not fatal (set RACELENS_E2E_STRICT_EXPLAIN=1 to require it)')
  end

  -- 3. Code action for that diagnostic.
  local params = {
    textDocument = { uri = uri },
    range = lsp_diag.range,
    context = { diagnostics = { lsp_diag } },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', params, 6000)
  local resp = responses and responses[client.id]
  check(resp ~= nil and resp.err == nil, 'codeAction answered (err=%s)', resp and vim.inspect(resp.err) or 'timeout')
  local action
  for _, a in ipairs(resp.result or {}) do
    log('code action: %s [%s]', tostring(a.title), tostring(a.kind))
    if action == nil and type(a.kind) == 'string' and (a.kind == 'quickfix' or a.kind:find('^quickfix%.')) then
      action = a
    end
  end
  check(action ~= nil, 'a quickfix code action is offered')
  if action.edit == nil and action.command == nil then
    local rs = vim.lsp.buf_request_sync(buf, 'codeAction/resolve', action, 4000)
    if rs and rs[client.id] and rs[client.id].result then
      action = rs[client.id].result
    end
  end
  check(type(action.edit) == 'table', 'the quick fix "%s" carries a WorkspaceEdit', tostring(action.title))
  local changed_tick = vim.api.nvim_buf_get_changedtick(buf)
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
  check(vim.api.nvim_buf_get_changedtick(buf) ~= changed_tick, 'the edit changed the buffer')
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    log('  %2d| %s', i, l)
  end
  check(count(buf, 'counter++') == counter_writes, 'both counter++ are still there exactly once each')
  check(count(buf, marker) == 1, 'the non-ASCII comment survived the edit intact')
  check(count(buf, 'pthread_mutex_lock(&m)') >= 2, 'the fix added a pthread_mutex_lock(&m)')

  -- 4. The race is gone once the server has seen the change.
  local gone = vim.wait(15000, function()
    return #race_diagnostics(buf) == 0
  end, 50)
  check(gone, 'race diagnostics are gone after the fix (left: %d)', #race_diagnostics(buf))
  vim.wait(1000, function() return false end, 50)
  check(#race_diagnostics(buf) == 0, 'and they stay gone')

  -- 5. :RacelensRestart brings up a new client on the (fixed) buffer.
  local old_id = client.id
  vim.cmd('RacelensRestart')
  local restarted = vim.wait(8000, function()
    local c = racelens.get_clients(buf)[1]
    return c ~= nil and c.id ~= old_id
  end, 50)
  check(restarted, ':RacelensRestart attached a new client')
  local new_client = racelens.get_clients(buf)[1]
  check(new_client.offset_encoding == 'utf-8', 'the new client uses utf-8 too')
  check(#racelens.get_clients() == 1, 'exactly one racelens client is running')
end

local ok, err = xpcall(run, function(e)
  if e == 'check failed' then
    return e
  end
  return debug.traceback(tostring(e), 2)
end)
if not ok then
  failed = true
  if err ~= 'check failed' then
    log('ERROR: %s', tostring(err))
  end
end
finish()
