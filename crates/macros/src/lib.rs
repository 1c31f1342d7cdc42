//! `#[derive(Pytree)]`: flattens a struct field by field, in declaration
//! order, into a `Struct` tree node named after the type.
//!
//! Invariant: the generated `unflatten_from` checks the node's name and
//! field list, so a tree built for one struct never rebuilds another.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use proc_macro_crate::{crate_name, FoundCrate};
use quote::quote;
use syn::{parse_macro_input, parse_quote, Data, DeriveInput, Fields, GenericParam, Index};

/// Derives `Pytree` for a struct whose fields are all pytrees. Fields of
/// Rust scalar types are static leaves; wrap other static data in
/// `Static<T>`.
#[proc_macro_derive(Pytree)]
pub fn derive_pytree(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The path of the crate that defines `Pytree`, as the user's crate names it.
///
/// `FoundCrate::Itself` means "this package", which is also what cargo
/// reports for the package's examples and doc-tests: separate crates, where
/// `crate::` is wrong. So it names the crate absolutely, and `jaxon` and
/// `jaxon-trace` declare `extern crate self as ...;` for their own code.
fn pytree_path() -> TokenStream2 {
    for (krate, sub) in [("jaxon", quote!(pytree)), ("jaxon-trace", quote!(pytree))] {
        match crate_name(krate) {
            Ok(FoundCrate::Itself) => {
                let ident = syn::Ident::new(&krate.replace('-', "_"), Span::call_site());
                return quote!(::#ident::#sub);
            }
            Ok(FoundCrate::Name(name)) => {
                let ident = syn::Ident::new(&name, Span::call_site());
                return quote!(::#ident::#sub);
            }
            Err(_) => continue,
        }
    }
    quote!(::jaxon::pytree)
}

fn expand(mut input: DeriveInput) -> syn::Result<TokenStream2> {
    let path = pytree_path();
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Pytree)] supports structs only",
        ));
    };
    let (accessors, labels, build): (Vec<TokenStream2>, Vec<String>, TokenStream2) = match &data
        .fields
    {
        Fields::Named(named) => {
            let idents: Vec<_> = named.named.iter().filter_map(|f| f.ident.clone()).collect();
            let tys: Vec<_> = named.named.iter().map(|f| f.ty.clone()).collect();
            let idx = 0..idents.len();
            let build = quote! {
                Self { #( #idents: <#tys as #path::Pytree>::unflatten_from(&children[#idx], leaves)?, )* }
            };
            (
                idents.iter().map(|i| quote!(self.#i)).collect(),
                idents.iter().map(|i| i.to_string()).collect(),
                build,
            )
        }
        Fields::Unnamed(unnamed) => {
            let n = unnamed.unnamed.len();
            let tys: Vec<_> = unnamed.unnamed.iter().map(|f| f.ty.clone()).collect();
            let idx: Vec<_> = (0..n).collect();
            let build = quote! {
                Self( #( <#tys as #path::Pytree>::unflatten_from(&children[#idx], leaves)?, )* )
            };
            (
                (0..n)
                    .map(|i| {
                        let i = Index::from(i);
                        quote!(self.#i)
                    })
                    .collect(),
                (0..n).map(|i| i.to_string()).collect(),
                build,
            )
        }
        Fields::Unit => (Vec::new(), Vec::new(), quote!(Self)),
    };
    for param in &mut input.generics.params {
        if let GenericParam::Type(t) = param {
            t.bounds.push(parse_quote!(#path::Pytree));
        }
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let type_name = name.to_string();
    let nfields = labels.len();
    Ok(quote! {
        impl #impl_generics #path::Pytree for #name #ty_generics #where_clause {
            fn flatten_into(&self, leaves: &mut ::std::vec::Vec<#path::__Array>) -> #path::TreeDef {
                #path::TreeDef::Node(
                    #path::NodeKind::Struct { name: #type_name, fields: ::std::vec![#(#labels),*] },
                    ::std::vec![#( #path::Pytree::flatten_into(&#accessors, leaves) ),*],
                )
            }
            fn unflatten_from(
                def: &#path::TreeDef,
                leaves: &mut dyn ::std::iter::Iterator<Item = #path::__Array>,
            ) -> #path::__Result<Self> {
                let children = def.children_of(
                    &#path::NodeKind::Struct { name: #type_name, fields: ::std::vec![#(#labels),*] },
                    ::std::option::Option::Some(#nfields),
                )?;
                let _ = &children;
                ::std::result::Result::Ok(#build)
            }
        }
    })
}
