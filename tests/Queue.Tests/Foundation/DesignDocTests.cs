using System.Text.RegularExpressions;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>
/// docs/DESIGN.md stays true to the code: every code name it writes in backticks (<c>TypeName</c> or
/// <c>TypeName.Member</c>) exists in the source, and every section title the code cites after a mention of DESIGN.md is
/// a heading there. Reads files only: no database, no service.
/// </summary>
public sealed partial class DesignDocTests
{
    private static readonly string Root = RepoDirectory.Root();

    private static readonly Lazy<Source> Product = new(() => Source.Read(ProductFiles()));
    private static readonly Lazy<Source> Tests = new(() => Source.Read(CsFiles(Path.Combine(Root, "tests"))));

    [Fact]
    public void Every_code_name_DESIGN_cites_exists()
    {
        var names = CodeNames(File.ReadAllText(Path.Combine(Root, "docs", "DESIGN.md")));
        Assert.NotEmpty(names);
        Assert.Empty(names.Where(n => !Exists(n)).Order());
    }

    [Fact]
    public void A_name_that_is_nowhere_in_the_code_is_caught()
    {
        var names = CodeNames("The claim (`ClaimEngine.ClaimAsync`) shares the `NoSuchType` back; `ClaimEngine.TakeAsync` and `ClaimOutcome` are gone.");
        Assert.Equal(["ClaimEngine.ClaimAsync", "ClaimEngine.TakeAsync", "ClaimOutcome", "NoSuchType"], names.Order());
        Assert.Equal(["ClaimEngine.TakeAsync", "ClaimOutcome", "NoSuchType"], names.Where(n => !Exists(n)).Order());
    }

    [Fact]
    public void Every_DESIGN_section_the_code_cites_is_a_heading_of_DESIGN()
    {
        var headings = File.ReadAllLines(Path.Combine(Root, "docs", "DESIGN.md"))
            .Where(l => l.StartsWith('#'))
            .Select(l => l.TrimStart('#').Trim())
            .ToList();
        var citing = ProductFiles()
            .Concat(CsFiles(Path.Combine(Root, "tests")))
            .Concat(Directory.EnumerateFiles(Path.Combine(Root, "migrations"), "*.sql"))
            .Concat(Directory.EnumerateFiles(Path.Combine(Root, "scripts"), "*.sh"))
            .Concat(ProjectFiles())
            .Append(Path.Combine(Root, "README.md"))
            .Append(Path.Combine(Root, "docs", "CONTRACT.md"));
        var missing = new SortedSet<string>(StringComparer.Ordinal);
        var cited = 0;
        foreach (var file in citing)
        {
            foreach (Match m in Citation().Matches(File.ReadAllText(file)))
            {
                var title = CommentBreak().Replace(m.Groups[1].Value, " ");
                cited++;
                if (!headings.Any(h => h.StartsWith(title, StringComparison.Ordinal)))
                {
                    missing.Add($"{Path.GetRelativePath(Root, file)}: \"{title}\"");
                }
            }
        }
        Assert.True(cited > 20, $"only {cited} citations of DESIGN.md found");
        Assert.Empty(missing);
    }

    /// <summary>Backticked words shaped like a C# type or a type's member: PascalCase, at least one lower-case letter.</summary>
    private static List<string> CodeNames(string markdown) =>
        Backticked().Matches(markdown)
            .Select(m => m.Groups[1].Value)
            .Where(n => CodeName().IsMatch(n) && n.Split('.')[0].Any(char.IsLower))
            .Distinct()
            .ToList();

    /// <summary>
    /// A type named in the product (or, ending in "Tests", in the tests) must be declared there, and its member must
    /// appear in a file that declares it, not after a dot (so a call on another type does not count). A name the code
    /// does not declare (a framework type, a namespace) must at least appear in the code, every part of it.
    /// </summary>
    private static bool Exists(string name)
    {
        var parts = name.Split('.');
        var source = parts[0].EndsWith("Tests", StringComparison.Ordinal) ? Tests.Value : Product.Value;
        var declaring = source.Declaring(parts[0]);
        if (declaring.Count > 0)
        {
            return parts.Length == 1 || declaring.Any(f => f.Own.Contains(parts[1]));
        }
        return parts.All(p => source.Files.Any(f => f.Words.Contains(p)));
    }

    private static IEnumerable<string> ProductFiles() =>
        Directory.EnumerateDirectories(Root, "Queue.*").SelectMany(CsFiles);

    private static IEnumerable<string> ProjectFiles() =>
        Directory.EnumerateDirectories(Root, "Queue.*").SelectMany(d => Directory.EnumerateFiles(d, "*.csproj"));

    private static IEnumerable<string> CsFiles(string dir) =>
        Directory.EnumerateFiles(dir, "*.cs", SearchOption.AllDirectories)
            .Where(f => !f.Split(Path.DirectorySeparatorChar).Any(p => p is "bin" or "obj"));

    private sealed class Source(List<Source.File> files)
    {
        public List<File> Files { get; } = files;

        public static Source Read(IEnumerable<string> paths) => new(paths.Select(p => new File(System.IO.File.ReadAllText(p))).ToList());

        public List<File> Declaring(string type)
        {
            var declaration = new Regex($@"\b(class|record|struct|interface|enum)\s+{Regex.Escape(type)}\b");
            return Files.Where(f => declaration.IsMatch(f.Text)).ToList();
        }

        /// <summary>A file's text, every identifier in it, and those not written after a dot (its own members).</summary>
        public sealed class File
        {
            public File(string text)
            {
                Text = text;
                foreach (var m in Identifier().EnumerateMatches(text))
                {
                    var word = text.Substring(m.Index, m.Length);
                    Words.Add(word);
                    if (m.Index == 0 || text[m.Index - 1] != '.')
                    {
                        Own.Add(word);
                    }
                }
            }

            public string Text { get; }

            public HashSet<string> Words { get; } = new(StringComparer.Ordinal);

            public HashSet<string> Own { get; } = new(StringComparer.Ordinal);
        }
    }

    [GeneratedRegex(@"[A-Za-z_][A-Za-z0-9_]*")]
    private static partial Regex Identifier();

    [GeneratedRegex(@"`([^`\n]+)`")]
    private static partial Regex Backticked();

    [GeneratedRegex(@"^[A-Z][A-Za-z0-9]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")]
    private static partial Regex CodeName();

    [GeneratedRegex(@"DESIGN\.md,?\s+""([^""]+)""")]
    private static partial Regex Citation();

    [GeneratedRegex(@"\s*\n\s*(///|//|--|#)?\s*")]
    private static partial Regex CommentBreak();
}
