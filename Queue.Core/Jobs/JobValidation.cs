using System.Net.Http.Headers;

namespace Queue.Core.Jobs;

/// <summary>The field rules of docs/CONTRACT.md "Customer endpoints", shared by the JSON and the streamed paths.</summary>
public static class JobValidation
{
    public const int MaxJobName = 200;
    public const int MaxDocumentName = 255;
    public const int MaxContentType = 255;
    public const int MaxTasks = 5;

    public static string? JobName(string? name) =>
        name is null ? "is required"
        : name.Length is < 1 or > MaxJobName ? $"must be 1 to {MaxJobName} characters"
        : string.IsNullOrWhiteSpace(name) ? "must not be blank"
        : null;

    public static string? DocumentName(string? name) =>
        name is null ? "is required"
        : name.Length is < 1 or > MaxDocumentName ? $"must be 1 to {MaxDocumentName} characters"
        : string.IsNullOrWhiteSpace(name) ? "must not be blank"
        : name.Any(char.IsControl) ? "must not hold control characters"
        : null;

    public static string? ContentType(string? contentType) =>
        contentType is null ? null
        : contentType.Length is < 1 or > MaxContentType ? $"must be 1 to {MaxContentType} characters"
        : !MediaTypeHeaderValue.TryParse(contentType, out _) ? "is not a media type such as 'application/pdf'"
        : null;

    public static Dictionary<string, string[]> Document(string? name, string? contentType, string field, string contentTypeField = "contentType")
    {
        var errors = new Dictionary<string, string[]>();
        if (DocumentName(name) is { } n)
        {
            errors[field] = [n];
        }
        if (ContentType(contentType) is { } c)
        {
            errors[contentTypeField] = [c];
        }
        return errors;
    }

    /// <summary>
    /// POST /jobs's fields, inline documents included: the errors by field (a 400), and the first document over
    /// <paramref name="maxDocumentBytes"/> (a 413, answered only when nothing else is wrong).
    /// </summary>
    public static (Dictionary<string, string[]> Errors, int? TooLarge) NewJob(
        string? name, IReadOnlyList<string>? tasks, IReadOnlyList<InlineDocumentFields?> documents, int maxDocuments, long maxDocumentBytes)
    {
        var errors = new Dictionary<string, string[]>();
        if (JobName(name) is { } n)
        {
            errors["name"] = [n];
        }
        if (tasks is not null && Validation.Tasks(tasks, MaxTasks, allowEmpty: false) is { } t)
        {
            errors["tasks"] = [t];
        }
        if (documents.Count > maxDocuments)
        {
            errors["documents"] = [$"at most {maxDocuments} documents per request; add more with POST /jobs/{{id}}/documents"];
        }
        int? tooLarge = null;
        for (var i = 0; i < documents.Count; i++)
        {
            if (documents[i] is not { } d)
            {
                errors[$"documents[{i}]"] = ["must be an object"];
                continue;
            }
            foreach (var (field, messages) in Document(d.Name, d.ContentType, $"documents[{i}].name", $"documents[{i}].contentType"))
            {
                errors[field] = messages;
            }
            if (d.ContentLength is not { } length)
            {
                errors[$"documents[{i}].content"] = ["is required (base64)"];
            }
            else if (!d.ContentIsBase64)
            {
                errors[$"documents[{i}].content"] = ["is not valid base64"];
            }
            else if (length > maxDocumentBytes)
            {
                tooLarge ??= i;
            }
        }
        return (errors, tooLarge);
    }

    /// <summary>A streamed document's name and type, checked before a byte of it is stored.</summary>
    public static void ThrowIfInvalid(IncomingDocument doc)
    {
        var errors = Document(doc.Name, doc.ContentType, "name");
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
    }

    /// <summary>Task names are [a-z0-9-] only (validated before this), so the JSON array needs no escaping.</summary>
    public static string TasksJson(IEnumerable<string> tasks) => "[\"" + string.Join("\",\"", tasks) + "\"]";
}

/// <summary>
/// An inline document of POST /jobs as it was read, for <see cref="JobValidation.NewJob"/>: a null
/// <paramref name="ContentLength"/> when it had no content, <paramref name="ContentIsBase64"/> false when that content was not base64.
/// </summary>
public readonly record struct InlineDocumentFields(string? Name, string? ContentType, long? ContentLength, bool ContentIsBase64);
