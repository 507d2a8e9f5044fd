// Which documents the language client serves. VS Code (like Neovim 0.7)
// gives `.h` files the language `cpp`; in a C workspace they are C headers
// and get the server too, while real C++ sources never do.

/** A document filter as vscode-languageclient takes it. */
export interface DocumentFilter {
  scheme: string;
  language: string;
  pattern?: string;
}

/** File extensions of C++ sources and headers: a workspace with any is C++. */
export const CPP_EXTENSIONS = ['cc', 'cpp', 'cxx', 'c++', 'hpp', 'hh', 'hxx', 'h++', 'ipp', 'tpp'];

/** Glob of the C++ files that make a workspace C++ (for `findFiles`). */
export const CPP_GLOB = `**/*.{${CPP_EXTENSIONS.join(',')}}`;

/** A C workspace has .c files and no C++ sources. */
export function isCWorkspace(hasCFiles: boolean, hasCppFiles: boolean): boolean {
  return hasCFiles && !hasCppFiles;
}

/** The client's document selector: C files, plus `.h` files typed `cpp` in a C workspace. */
export function documentSelector(cWorkspace: boolean): DocumentFilter[] {
  const selector: DocumentFilter[] = [{ scheme: 'file', language: 'c' }];
  if (cWorkspace) {
    selector.push({ scheme: 'file', language: 'cpp', pattern: '**/*.h' });
  }
  return selector;
}

/** Is this document one the server handles (for commands such as explain)? */
export function isServedDocument(languageId: string, fileName: string, cWorkspace: boolean): boolean {
  return languageId === 'c' || (cWorkspace && languageId === 'cpp' && fileName.endsWith('.h'));
}
