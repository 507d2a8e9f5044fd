-- Minimal init for the headless tests: only this plug-in on the runtimepath,
-- no user config, no swap or shada files.
local this = debug.getinfo(1, 'S').source:sub(2)
local plugin_root = vim.fn.fnamemodify(this, ':p:h:h') -- editors/nvim
vim.opt.runtimepath:prepend(plugin_root)
vim.o.swapfile = false
vim.o.shadafile = 'NONE'
vim.o.more = false
vim.cmd('filetype on')
if os.getenv('RACELENS_LSP_LOG_LEVEL') then
  vim.lsp.set_log_level(os.getenv('RACELENS_LSP_LOG_LEVEL'))
end
