-- Unit tests of the plug-in's helpers; no server needed.
-- Run: nvim --headless -i NONE -u test/minimal_init.lua -c "lua dofile('test/unit.lua')"
-- Writes "unit: N passed, M failed" (and failures) to $RACELENS_UNIT_RESULT or stdout.

local racelens = require('racelens')
local results = {}
local passed, failed = 0, 0

local function test(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    table.insert(results, 'ok   ' .. name)
  else
    failed = failed + 1
    table.insert(results, 'FAIL ' .. name .. ': ' .. tostring(err))
  end
end

local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(string.format('%s: expected %s, got %s', what or 'value', vim.inspect(b), vim.inspect(a)), 2)
  end
end

test('normalize_settings wraps a bare table and fills defaults', function()
  eq(racelens.normalize_settings(nil), {
    racelens = { enable = true, maySeverity = 'information', configPath = '', trace = { server = 'off' } },
  })
  local s = racelens.normalize_settings({ maySeverity = 'warning', enable = false })
  eq(s.racelens.maySeverity, 'warning')
  eq(s.racelens.enable, false)
  eq(s.racelens.trace.server, 'off')
  local s2 = racelens.normalize_settings({ racelens = { configPath = '/x.toml' } })
  eq(s2.racelens.configPath, '/x.toml')
  eq(s2.racelens.enable, true)
end)

test('encoding_from_result prefers positionEncoding, then offsetEncoding', function()
  eq(racelens.encoding_from_result({ capabilities = { positionEncoding = 'utf-8' } }), 'utf-8')
  eq(racelens.encoding_from_result({ capabilities = {}, offsetEncoding = 'utf-8' }), 'utf-8')
  eq(racelens.encoding_from_result({ capabilities = { positionEncoding = 'utf-16' }, offsetEncoding = 'utf-8' }), 'utf-16')
  eq(racelens.encoding_from_result({ capabilities = {}, offsetEncoding = 'utf8' }), 'utf-8')
  eq(racelens.encoding_from_result({ capabilities = {} }), nil)
  eq(racelens.encoding_from_result({ capabilities = { positionEncoding = 'latin1' } }), nil)
  eq(racelens.encoding_from_result(nil), nil)
end)

test('make_capabilities offers utf-8 and utf-16 both ways', function()
  local caps = racelens.make_capabilities({ textDocument = { codeAction = { isPreferredSupport = true } } })
  eq(caps.general.positionEncodings, { 'utf-8', 'utf-16' })
  eq(caps.offsetEncoding, { 'utf-8', 'utf-16' })
  eq(caps.workspace.configuration, true)
  eq(caps.textDocument.codeAction.isPreferredSupport, true)
end)

test('lookup_section walks dotted sections and keeps false', function()
  local settings = racelens.normalize_settings({ enable = false })
  eq(racelens.lookup_section(settings, 'racelens').maySeverity, 'information')
  eq(racelens.lookup_section(settings, 'racelens.enable'), false)
  eq(racelens.lookup_section(settings, 'racelens.trace.server'), 'off')
  eq(racelens.lookup_section(settings, 'racelens.nope'), vim.NIL)
  eq(racelens.lookup_section(settings, 'racelens.enable.deeper'), vim.NIL)
  eq(racelens.lookup_section(settings, nil), settings)
  eq(racelens.lookup_section(settings, ''), settings)
end)

test('configuration_handler answers every item in order', function()
  racelens.setup({ cmd = { '/nonexistent/racelens', 'lsp' }, settings = { maySeverity = 'hint' }, autostart = false })
  local out = racelens.configuration_handler(nil, {
    items = { { section = 'racelens' }, {}, { section = 'other' }, { section = 'racelens.maySeverity' } },
  }, { client_id = 987654 })
  eq(#out, 4, 'answers')
  eq(out[1].maySeverity, 'hint')
  eq(out[2].racelens.maySeverity, 'hint')
  eq(out[3], vim.NIL)
  eq(out[4], 'hint')
  -- JSON shape sent to the server.
  local json = vim.fn.json_encode(out[1])
  assert(json:find('"maySeverity": *"hint"'), json)
end)

test('find_root stops at the nearest marker, else uses the file directory', function()
  local tmp = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(tmp .. '/proj/src/deep', 'p')
  vim.fn.writefile({}, tmp .. '/proj/racelens.toml')
  vim.fn.writefile({}, tmp .. '/proj/src/deep/a.c')
  eq(racelens.find_root(tmp .. '/proj/src/deep/a.c', { 'racelens.toml', '.git' }), tmp .. '/proj')
  eq(racelens.find_root(tmp .. '/proj/src/deep/a.c', { 'no-such-marker-xyz' }), tmp .. '/proj/src/deep')
  eq(racelens.find_root(tmp .. '/proj/src/deep', { 'racelens.toml' }), tmp .. '/proj')
  vim.fn.delete(tmp, 'rf')
end)

test('format_explanation prints header, text and 1-based steps', function()
  local lines = racelens.format_explanation({
    race = 'data race on `counter`',
    text = 'worker: lock m; counter++\r\nmain: counter++\n',
    steps = {
      { message = 'main writes', uri = 'file:///proj/src/race.c',
        range = { start = { line = 21, character = 4 }, ['end'] = { line = 21, character = 11 } } },
      { message = 'elsewhere', uri = 'file:///other/x.c',
        range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 1 } } },
    },
  }, '/proj')
  eq(lines, {
    'racelens: data race on `counter`',
    '================================',
    '',
    'worker: lock m; counter++',
    'main: counter++',
    '',
    'Steps:',
    '  1. src/race.c:22:5  main writes',
    '  2. /other/x.c:1:1  elsewhere',
  })
end)

test('setup defines the user commands and the FileType autocommand', function()
  racelens.setup({ cmd = { '/nonexistent/racelens', 'lsp' }, filetypes = { 'c' } })
  local cmds = vim.api.nvim_get_commands({})
  assert(cmds.RacelensExplain, 'RacelensExplain defined')
  assert(cmds.RacelensRestart, 'RacelensRestart defined')
  local aus = vim.api.nvim_get_autocmds({ group = 'racelens', event = 'FileType' })
  local patterns = {}
  for _, au in ipairs(aus) do
    table.insert(patterns, au.pattern)
  end
  table.sort(patterns)
  eq(patterns, { 'c', 'cpp' }, 'FileType autocommand patterns (cpp for C headers)')
  eq(racelens.config.settings.racelens.enable, true)
  eq(racelens.config.cmd, { '/nonexistent/racelens', 'lsp' })
end)

test('cpp buffers attach only for .h files of C projects', function()
  local function project(files)
    local dir = vim.fn.tempname()
    vim.fn.mkdir(dir .. '/sub', 'p')
    for _, f in ipairs(files) do
      vim.fn.writefile({ 'int x;' }, dir .. '/' .. f)
    end
    vim.fn.writefile({}, dir .. '/racelens.toml')
    return dir
  end
  racelens.setup({ cmd = { '/nonexistent/racelens', 'lsp' }, autostart = false })
  local c_proj = project({ 'main.c', 'sub/util.h' })
  local cpp_proj = project({ 'main.cpp', 'sub/util.h', 'legacy.c' })
  eq(racelens.is_c_project(c_proj), true, 'C project')
  eq(racelens.is_c_project(cpp_proj), false, 'C++ project')
  local function buffer(path, ft)
    local buf = vim.api.nvim_create_buf(true, false)
    vim.api.nvim_buf_set_name(buf, path)
    vim.bo[buf].filetype = ft
    return buf
  end
  eq(racelens.wants_buffer(buffer(c_proj .. '/sub/util.h', 'cpp')), true, '.h in a C project')
  eq(racelens.wants_buffer(buffer(cpp_proj .. '/sub/util.h', 'cpp')), false, '.h in a C++ project')
  eq(racelens.wants_buffer(buffer(c_proj .. '/x.cpp', 'cpp')), false, 'a real C++ source')
  eq(racelens.wants_buffer(buffer(c_proj .. '/y.c', 'c')), true, 'a C source')
  racelens.setup({ cmd = { '/nonexistent/racelens', 'lsp' }, autostart = false, c_headers = false })
  eq(racelens.wants_buffer(buffer(c_proj .. '/sub/other.h', 'cpp')), false, 'c_headers = false')
end)

test('a missing binary is reported once and starts nothing', function()
  local notes = {}
  local orig = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, { msg, level })
  end
  racelens.setup({ cmd = { '/nonexistent/racelens', 'lsp' } })
  vim.cmd('enew')
  vim.bo.filetype = 'c'
  vim.cmd('enew')
  vim.bo.filetype = 'c'
  vim.notify = orig
  eq(#racelens.get_clients(), 0, 'clients')
  eq(#notes, 1, 'notifications')
  assert(notes[1][1]:find('/nonexistent/racelens', 1, true), notes[1][1])
  eq(notes[1][2], vim.log.levels.ERROR)
end)

test('make_client_config carries settings, init_options and capabilities', function()
  racelens.setup({ cmd = { 'racelens', 'lsp' }, settings = { configPath = '/c.toml' }, autostart = false })
  local cfg = racelens.make_client_config('/proj')
  eq(cfg.name, 'racelens')
  eq(cfg.root_dir, '/proj')
  eq(cfg.cmd, { 'racelens', 'lsp' })
  eq(cfg.init_options.configPath, '/c.toml')
  eq(cfg.settings.racelens.configPath, '/c.toml')
  eq(cfg.capabilities.general.positionEncodings, { 'utf-8', 'utf-16' })
  eq(cfg.workspace_folders[1].uri, 'file:///proj')
  assert(cfg.handlers['workspace/configuration'] == racelens.configuration_handler)
  -- on_init takes the server's encoding.
  local sent = {}
  local client = { offset_encoding = 'utf-16' }
  client.notify = function(a, b, c)
    if a == client then -- client:notify() on 0.11+
      a, b = b, c
    end
    table.insert(sent, { a, b })
  end
  cfg.on_init(client, { capabilities = {}, offsetEncoding = 'utf-8' })
  eq(client.offset_encoding, 'utf-8')
  if not vim.lsp.start then
    -- 0.7: the settings are pushed once after initialize.
    eq(#sent, 1, 'notifications')
    eq(sent[1][1], 'workspace/didChangeConfiguration')
    eq(sent[1][2].settings.racelens.configPath, '/c.toml')
  end
end)

local summary = string.format('unit: %d passed, %d failed', passed, failed)
table.insert(results, summary)
local out = os.getenv('RACELENS_UNIT_RESULT')
if out then
  local f = assert(io.open(out, 'w'))
  f:write(table.concat(results, '\n') .. '\n')
  f:close()
else
  io.stdout:write(table.concat(results, '\n') .. '\n')
end
if failed > 0 then
  vim.cmd('cquit 2')
else
  vim.cmd('qall!')
end
