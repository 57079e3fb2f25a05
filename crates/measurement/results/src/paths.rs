//! Outputs apart from inputs: no command writes over a file it reads, into a dump or a state it
//! reads, or (a directory of outputs) around an input it would then replace. Every command calls
//! [`check_apart`] before any work, with its outputs and inputs as the user named them; the
//! paths are compared resolved (links followed, `..` and `.` gone), an output by its existing
//! parent resolved and its own name, since a result replaces a link rather than writing through.

use std::path::{Component, Path, PathBuf};

/// A path a command writes: a file (`--json`) or a directory of outputs (`--out`).
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The option naming it (`--json`).
    pub option: &'static str,
    /// The path given.
    pub path: &'a Path,
    /// A directory the command writes files into, not a file.
    pub is_dir: bool,
}

/// A path a command reads: a file (`--disk-table`) or a directory (`--dump`, `--state`).
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The option naming it (`--dump`, or `input` for a positional one).
    pub option: &'static str,
    /// The path given.
    pub path: &'a Path,
    /// A directory (a dump, a state): nothing may be written inside it.
    pub is_dir: bool,
}

impl<'a> Output<'a> {
    /// The file `option` names.
    pub fn file(option: &'static str, path: &'a Path) -> Self {
        Self {
            option,
            path,
            is_dir: false,
        }
    }

    /// The directory of outputs `option` names.
    pub fn dir(option: &'static str, path: &'a Path) -> Self {
        Self {
            option,
            path,
            is_dir: true,
        }
    }
}

impl<'a> Input<'a> {
    /// The file `option` names.
    pub fn file(option: &'static str, path: &'a Path) -> Self {
        Self {
            option,
            path,
            is_dir: false,
        }
    }

    /// The directory `option` names.
    pub fn dir(option: &'static str, path: &'a Path) -> Self {
        Self {
            option,
            path,
            is_dir: true,
        }
    }
}

/// An output that would write over, into or around an input.
#[derive(Debug, thiserror::Error)]
pub enum PathClashError {
    /// The output is the input file.
    #[error(
        "{output_option} {}: is the file {input_option} {} names, which writing the result would replace; give another {output_option}",
        output.display(),
        input.display()
    )]
    SameFile {
        /// The output's option.
        output_option: &'static str,
        /// The output, as given.
        output: PathBuf,
        /// The input's option.
        input_option: &'static str,
        /// The input, as given.
        input: PathBuf,
    },
    /// The output lies inside an input directory (a dump, a state).
    #[error(
        "{output_option} {}: lies inside {input_option} {}, which is read and never written; give an {output_option} outside it",
        output.display(),
        input.display()
    )]
    InsideInput {
        /// The output's option.
        output_option: &'static str,
        /// The output, as given.
        output: PathBuf,
        /// The input's option.
        input_option: &'static str,
        /// The input, as given.
        input: PathBuf,
    },
    /// An input lies inside the directory of outputs, where the command writes and replaces
    /// files.
    #[error(
        "{input_option} {}: lies inside {output_option} {}, where the command writes its files; move it out or give another {output_option}",
        input.display(),
        output.display()
    )]
    InputInsideOutput {
        /// The output's option.
        output_option: &'static str,
        /// The output directory, as given.
        output: PathBuf,
        /// The input's option.
        input_option: &'static str,
        /// The input, as given.
        input: PathBuf,
    },
}

/// Refuses any of `outputs` that is one of `inputs`' files, lies inside (or is) one of their
/// directories, or (a directory of outputs) holds one of them. Called before any work.
pub fn check_apart(outputs: &[Output<'_>], inputs: &[Input<'_>]) -> Result<(), PathClashError> {
    for output in outputs {
        let written = resolved_output(output.path);
        for input in inputs {
            let read = resolved_input(input.path);
            let (output_option, input_option) = (output.option, input.option);
            let (output_path, input_path) = (output.path.to_path_buf(), input.path.to_path_buf());
            if input.is_dir && written.starts_with(&read) {
                return Err(PathClashError::InsideInput {
                    output_option,
                    output: output_path,
                    input_option,
                    input: input_path,
                });
            }
            if !input.is_dir && written == read {
                return Err(PathClashError::SameFile {
                    output_option,
                    output: output_path,
                    input_option,
                    input: input_path,
                });
            }
            if output.is_dir && read.starts_with(&written) {
                return Err(PathClashError::InputInsideOutput {
                    output_option,
                    output: output_path,
                    input_option,
                    input: input_path,
                });
            }
        }
    }
    Ok(())
}

/// Where an input is: the path resolved where it exists, else as an output would be.
fn resolved_input(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| resolved_output(path))
}

/// Where an output goes: its parent resolved and its own name (a link there is replaced, not
/// followed); a parent that does not exist yet resolved from its nearest existing ancestor.
fn resolved_output(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut parts = Vec::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let lexical: PathBuf = parts.iter().collect();
    let Some(name) = lexical.file_name() else {
        return lexical;
    };
    let parent = lexical.parent().unwrap_or(Path::new("/"));
    match std::fs::canonicalize(parent) {
        Ok(parent) => parent.join(name),
        Err(_) => resolved_output(parent).join(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_compared_with_inputs_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::create_dir(base.join("dump")).unwrap();
        std::fs::write(base.join("fio.txt"), b"table").unwrap();
        std::os::unix::fs::symlink(base.join("dump"), base.join("dump-link")).unwrap();
        let dump = base.join("dump");
        let fio = base.join("fio.txt");
        let inputs = [
            Input::dir("--dump", &dump),
            Input::file("--disk-table", &fio),
        ];
        let refused = |output: Output<'_>| check_apart(&[output], &inputs).unwrap_err();

        let same = base.join("dump/../fio.txt");
        let err = refused(Output::file("--json", &same));
        assert!(matches!(err, PathClashError::SameFile { .. }), "{err}");
        assert!(err.to_string().contains("--disk-table"), "{err}");
        let through_link = base.join("dump-link/manifest.json");
        let err = refused(Output::file("--json", &through_link));
        assert!(matches!(err, PathClashError::InsideInput { .. }), "{err}");
        let deep = base.join("dump/new/deeper/out");
        let err = refused(Output::dir("--out", &deep));
        assert!(matches!(err, PathClashError::InsideInput { .. }), "{err}");
        let err = refused(Output::dir("--out", base));
        assert!(
            matches!(err, PathClashError::InputInsideOutput { .. }),
            "{err}"
        );

        let beside = base.join("results/b.json");
        check_apart(&[Output::file("--json", &beside)], &inputs).unwrap();
        let elsewhere = base.join("out");
        check_apart(&[Output::dir("--out", &elsewhere)], &inputs).unwrap();
        // A file output whose parent holds an input is apart from it.
        let next_to = base.join("b.json");
        check_apart(&[Output::file("--json", &next_to)], &inputs).unwrap();
    }
}
